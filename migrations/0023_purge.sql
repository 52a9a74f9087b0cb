-- Purge: the one destructive path (memhub-admin purge, admin/purge.py).
--
-- Everything else in memhub keeps history: revisions and session events are append-only, a
-- forgotten memory stays readable. An operator sometimes needs the opposite (a pasted secret,
-- personal data, a project handed back): every trace of one memory, handoff, session, artifact
-- or namespace removed for good, with a tombstone and an audit row saying that it happened,
-- who did it and why, and never what was removed.
--
-- The deletes run only inside the SECURITY DEFINER functions below, owned by the migrating
-- role, with a fixed search_path, not executable by PUBLIC or memhub_app. The append-only
-- triggers, and a new delete guard on the tables the app never deletes from, stand aside only
-- when memhub_purging() is true: the transaction-local flag `memhub.purging` is on AND the
-- current role is the table's owner. The functions set the flag in their SET clause (it ends
-- with the call) and run as their owner. memhub_app can set the flag (any role can set a
-- custom setting), but its statements run as memhub_app, not as the owner, and the owner's
-- functions memhub_app may call (artifacts, ANALYZE, gc) delete nothing the guards cover; so
-- the flag alone opens nothing (tests/integration/test_purge_guards.py).
--
-- A purged memory's words also live in its successors' `lineage` (0017): the memory that
-- replaced it holds its title and content, and the chain below holds them in turn. Each one
-- down the chain has its lineage derived again, by the rule that wrote it (storage/postgres/
-- sql/memories.sql, insert_memory), from the predecessors it still has. The memories the
-- purged one had replaced are relinked to its successor; when it had none (it was the current
-- decision, or was forgotten), they become DELETED: a replaced decision never comes back.

-- True inside a purge function (see above). Schema-qualified where it is called, so the
-- guards do not depend on the caller's search_path.
CREATE FUNCTION memhub_purging(tbl regclass) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('memhub.purging', true), '') = 'on'
       AND current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = tbl)
$$;

-- What history keeps of a purge. A tenant table: memory_get of a purged id answers NOT_FOUND
-- with `purged_at` (never the reason or the actor, which are the operator's). Written only by
-- the purge functions; the app may read it.
CREATE TABLE purge_tombstones (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace      text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    kind           text NOT NULL
                   CHECK (kind IN ('memory', 'handoff', 'session', 'artifact', 'namespace')),
    target         text NOT NULL CHECK (char_length(target) BETWEEN 1 AND 64),  -- id, sha256 hex, name
    -- SHA-256 of what was removed (a memory's content_hash, a handoff's body, a session's
    -- event payloads, an artifact's bytes; none for a namespace): proves what it was to someone
    -- who holds it, reveals nothing to whoever does not.
    content_sha256 bytea,
    purged_at      timestamptz NOT NULL DEFAULT now(),
    reason         text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
    actor          text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 200),
    removed        jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(removed) = 'object')
);
CREATE INDEX purge_tombstones_target ON purge_tombstones (namespace, kind, target);
ALTER TABLE purge_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE purge_tombstones FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON purge_tombstones
    USING (memhub_ns_visible(namespace)) WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON purge_tombstones AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON purge_tombstones AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON purge_tombstones AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
REVOKE ALL ON purge_tombstones FROM memhub_app;
GRANT SELECT ON purge_tombstones TO memhub_app;

-- --- the guards: as 0002, 0005 and 0017 wrote them, standing aside inside a purge ---------
CREATE OR REPLACE FUNCTION memory_revisions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF public.memhub_purging(TG_RELID) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'memory_revisions is append-only: DELETE refused'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.is_current AND NOT NEW.is_current
       AND (NEW.memory_id, NEW.namespace, NEW.revision, NEW.title, NEW.content, NEW.tags,
            NEW.author_client, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.memory_id, OLD.namespace, OLD.revision, OLD.title, OLD.content, OLD.tags,
            OLD.author_client, OLD.created_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'memory_revisions is append-only: UPDATE refused'
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE OR REPLACE FUNCTION session_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'session_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE OR REPLACE FUNCTION memories_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.created_at := now();
        NEW.updated_at := now();
        IF NEW.status <> 'ACTIVE' OR NEW.current_revision <> 1 THEN
            RAISE EXCEPTION 'a memory is born ACTIVE at revision 1'
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    -- A purge relinks or retires the memories the purged one replaced and derives its
    -- successors' lineage again; it changes nothing else.
    IF public.memhub_purging(TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF (NEW.id, NEW.namespace, NEW.seq, NEW.author_client, NEW.created_at)
       IS DISTINCT FROM (OLD.id, OLD.namespace, OLD.seq, OLD.author_client, OLD.created_at) THEN
        RAISE EXCEPTION 'a memory''s identity and provenance never change'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN ('SUPERSEDED', 'DELETED')
           OR (OLD.status = 'EXPIRED' AND NEW.status <> 'DELETED') THEN
            RAISE EXCEPTION 'status % is terminal here (refused: % -> %)',
                OLD.status, OLD.status, NEW.status USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    IF OLD.status = 'SUPERSEDED' AND NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
        RAISE EXCEPTION 'superseded_by never changes once set' USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.current_revision <> OLD.current_revision
       AND NEW.current_revision <> OLD.current_revision + 1 THEN
        RAISE EXCEPTION 'current_revision moves by exactly +1' USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.title, NEW.content, NEW.tags, NEW.content_hash)
       IS DISTINCT FROM (OLD.title, OLD.content, OLD.tags, OLD.content_hash)
       AND (NEW.current_revision <> OLD.current_revision + 1 OR OLD.status <> 'ACTIVE') THEN
        RAISE EXCEPTION 'revisioned columns change only with a new revision of an ACTIVE memory'
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION memories_lineage_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.lineage IS DISTINCT FROM OLD.lineage AND NOT public.memhub_purging(TG_RELID) THEN
        RAISE EXCEPTION 'a memory''s lineage is written once, when it is born'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

-- Memories, handoffs, sessions and artifact references are removed by a purge only, for every
-- role, the owner included (as the revisions). The app never deletes them, so it loses the
-- privilege too, with that of the rows that hang off a memory (revisions keep theirs: their
-- trigger refuses every role, tests/integration/test_memory_invariants.py).
CREATE FUNCTION memhub_delete_by_purge_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are removed only by memhub-admin purge', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END
$$;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'handoffs', 'sessions', 'artifacts']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE DELETE ON %I FOR EACH ROW'
                       ' EXECUTE FUNCTION memhub_delete_by_purge_only()', t || '_purge_only', t);
    END LOOP;
END
$$;
REVOKE DELETE ON memories, memory_corroborations, memory_embeddings, handoffs, sessions,
                 artifacts FROM memhub_app;

-- --- helpers, called inside the purge functions (as their owner) ----------------------------

-- Remove these blobs and their chunks where no namespace references them any more. A blob a
-- concurrent put is referencing right now is locked by that put: skipped (gc takes it later if
-- the put rolls back). Returns {artifact_blobs, artifact_chunks} removed.
CREATE FUNCTION memhub_delete_blobs(p_shas bytea[]) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    doomed bytea[];
    n_blobs bigint;
    n_chunks bigint;
BEGIN
    SELECT coalesce(array_agg(b.sha256), '{}') INTO doomed
      FROM (SELECT sha256 FROM artifact_blobs x
             WHERE x.sha256 = ANY (p_shas)
               AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = x.sha256)
               FOR UPDATE OF x SKIP LOCKED) b;
    DELETE FROM artifact_chunks WHERE sha256 = ANY (doomed);
    GET DIAGNOSTICS n_chunks = ROW_COUNT;
    DELETE FROM artifact_blobs WHERE sha256 = ANY (doomed);
    GET DIAGNOSTICS n_blobs = ROW_COUNT;
    RETURN jsonb_build_object('artifact_blobs', n_blobs, 'artifact_chunks', n_chunks);
END
$$;

-- Write the tombstone and the audit row of one purge; return the tombstone's id and time.
CREATE FUNCTION memhub_purge_record(p_namespace text, p_kind text, p_target text,
                                    p_content_sha256 bytea, p_removed jsonb, p_reason text,
                                    p_actor text, p_source text)
RETURNS purge_tombstones LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    tomb purge_tombstones;
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION 'a purge needs a reason' USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO purge_tombstones (namespace, kind, target, content_sha256, reason, actor, removed)
    VALUES (p_namespace, p_kind, p_target, p_content_sha256, btrim(p_reason), p_actor, p_removed)
    RETURNING * INTO tomb;
    INSERT INTO admin_audit (actor, action, source, detail)
    VALUES (p_actor, 'purge.' || p_kind, p_source,
            jsonb_build_object('kind', p_kind, 'target', p_target, 'namespace', p_namespace,
                               'reason', tomb.reason, 'tombstone_id', tomb.id,
                               'removed', p_removed));
    RETURN tomb;
END
$$;

-- The answer every purge function gives (NULL from them when there was nothing to purge).
CREATE FUNCTION memhub_purge_answer(tomb purge_tombstones, p_extra jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('kind', tomb.kind, 'target', tomb.target,
                              'namespace', tomb.namespace, 'tombstone_id', tomb.id,
                              'purged_at', tomb.purged_at, 'removed', tomb.removed) || p_extra
$$;

-- --- the purge functions ---------------------------------------------------------------------

CREATE FUNCTION memhub_purge_memory(p_id uuid, p_reason text, p_actor text, p_source text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = '' SET memhub.purging = 'on'
AS $$
DECLARE
    m memories%ROWTYPE;
    removed jsonb;
    n bigint;
    relinked bigint := 0;
    retired bigint := 0;
    rederived bigint := 0;
    next_id uuid;
    tomb purge_tombstones;
BEGIN
    -- The embedding worker holds a claimed job's lock while it waits for the memory's (to
    -- write the vector): the jobs are taken before the memory, never the other way round.
    DELETE FROM embedding_jobs WHERE memory_id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    SELECT * INTO m FROM memories WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    removed := jsonb_build_object('embedding_jobs', n);
    -- One recount of the namespace's word statistics at a time (memhub_refresh_lexicon): one
    -- that started before this commits would count the memory again.
    PERFORM pg_advisory_xact_lock(hashtext('memhub_lexicon'), hashtext(m.namespace));

    -- What it replaced now follows its successor, or retires with it.
    IF m.superseded_by IS NOT NULL THEN
        UPDATE memories SET superseded_by = m.superseded_by
         WHERE namespace = m.namespace AND superseded_by = p_id;
        GET DIAGNOSTICS relinked = ROW_COUNT;
    ELSE
        UPDATE memories
           SET status = 'DELETED', superseded_by = NULL,
               deleted_reason = 'the memory that replaced it was purged', updated_at = now()
         WHERE namespace = m.namespace AND superseded_by = p_id;
        GET DIAGNOSTICS retired = ROW_COUNT;
    END IF;

    -- Stored answers holding it (remember, revise, a dedup, a conflict), whatever field.
    DELETE FROM idempotency_keys
     WHERE namespace = m.namespace AND strpos(response::text, p_id::text) > 0;
    GET DIAGNOSTICS n = ROW_COUNT;
    removed := removed || jsonb_build_object('idempotency_keys', n);
    DELETE FROM embedding_jobs WHERE memory_id = p_id;  -- none can be added while it is locked
    DELETE FROM memory_embeddings WHERE memory_id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    removed := removed || jsonb_build_object('memory_embeddings', n);
    DELETE FROM memory_corroborations WHERE memory_id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    removed := removed || jsonb_build_object('memory_corroborations', n);
    DELETE FROM memory_revisions WHERE memory_id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    removed := removed || jsonb_build_object('memory_revisions', n);
    DELETE FROM memories WHERE id = p_id;
    removed := removed || jsonb_build_object('memories', 1);

    -- Down the chain, each successor's lineage derived again from what it still replaces.
    next_id := m.superseded_by;
    WHILE next_id IS NOT NULL LOOP
        UPDATE memories s
           SET lineage = (SELECT left(string_agg(concat_ws(' ', o.title, o.content, o.lineage),
                                                 ' ' ORDER BY o.seq), 8000)
                            FROM memories o
                           WHERE o.namespace = s.namespace AND o.superseded_by = s.id)
         WHERE s.id = next_id
        RETURNING s.superseded_by INTO next_id;
        rederived := rederived + 1;
    END LOOP;

    PERFORM memhub_refresh_lexicon(m.namespace);

    tomb := memhub_purge_record(m.namespace, 'memory', p_id::text, m.content_hash, removed,
                                p_reason, p_actor, p_source);
    RETURN memhub_purge_answer(tomb, jsonb_build_object(
        'predecessors_relinked', relinked, 'predecessors_retired', retired,
        'successors_rederived', rederived,
        'tables', jsonb_build_array('embedding_jobs', 'idempotency_keys', 'memory_embeddings',
                                    'memory_corroborations', 'memory_revisions', 'memories',
                                    'lexicon_words', 'lexicon_state')));
END
$$;

CREATE FUNCTION memhub_purge_handoff(p_id uuid, p_reason text, p_actor text, p_source text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = '' SET memhub.purging = 'on'
AS $$
DECLARE
    h handoffs%ROWTYPE;
    n bigint;
    tomb purge_tombstones;
BEGIN
    SELECT * INTO h FROM handoffs WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    DELETE FROM idempotency_keys
     WHERE namespace = h.namespace AND strpos(response::text, p_id::text) > 0;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM handoffs WHERE id = p_id;
    tomb := memhub_purge_record(h.namespace, 'handoff', p_id::text,
                                sha256(convert_to(h.body, 'UTF8')),
                                jsonb_build_object('handoffs', 1, 'idempotency_keys', n),
                                p_reason, p_actor, p_source);
    RETURN memhub_purge_answer(tomb, jsonb_build_object(
        'tables', jsonb_build_array('handoffs', 'idempotency_keys')));
END
$$;

CREATE FUNCTION memhub_purge_session(p_id uuid, p_reason text, p_actor text, p_source text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = '' SET memhub.purging = 'on'
AS $$
DECLARE
    s sessions%ROWTYPE;
    digest bytea;
    n_keys bigint;
    n_events bigint;
    tomb purge_tombstones;
BEGIN
    SELECT * INTO s FROM sessions WHERE id = p_id FOR UPDATE;  -- appends wait on this row
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT sha256(convert_to(coalesce(string_agg(payload::text, E'\n' ORDER BY seq), ''),
                             'UTF8'))
      INTO digest FROM session_events WHERE session_id = p_id;
    DELETE FROM idempotency_keys
     WHERE namespace = s.namespace AND strpos(response::text, p_id::text) > 0;
    GET DIAGNOSTICS n_keys = ROW_COUNT;
    DELETE FROM session_events WHERE session_id = p_id;
    GET DIAGNOSTICS n_events = ROW_COUNT;
    DELETE FROM sessions WHERE id = p_id;
    tomb := memhub_purge_record(s.namespace, 'session', p_id::text, digest,
                                jsonb_build_object('sessions', 1, 'session_events', n_events,
                                                   'idempotency_keys', n_keys),
                                p_reason, p_actor, p_source);
    RETURN memhub_purge_answer(tomb, jsonb_build_object(
        'tables', jsonb_build_array('sessions', 'session_events', 'idempotency_keys')));
END
$$;

-- An artifact is its content: every reference to these bytes (in one namespace, or in every
-- one when p_namespace is NULL), then the bytes once nothing references them. One tombstone
-- per namespace that held them.
CREATE FUNCTION memhub_purge_artifact(p_sha bytea, p_namespace text, p_reason text,
                                      p_actor text, p_source text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = '' SET memhub.purging = 'on'
AS $$
DECLARE
    holders text[];
    counts bigint[];
    blobs jsonb;
    tomb purge_tombstones;
    tombs jsonb := '[]'::jsonb;
BEGIN
    WITH gone AS (
        DELETE FROM artifacts
         WHERE sha256 = p_sha AND (p_namespace IS NULL OR namespace = p_namespace)
        RETURNING namespace),
    per_namespace AS (SELECT namespace, count(*) AS n FROM gone GROUP BY namespace)
    SELECT array_agg(namespace ORDER BY namespace), array_agg(n ORDER BY namespace)
      INTO holders, counts FROM per_namespace;
    IF holders IS NULL THEN
        RETURN NULL;
    END IF;
    blobs := memhub_delete_blobs(ARRAY[p_sha]);
    FOR i IN 1..cardinality(holders) LOOP
        tomb := memhub_purge_record(holders[i], 'artifact', encode(p_sha, 'hex'), p_sha,
                                    jsonb_build_object('artifacts', counts[i]),
                                    p_reason, p_actor, p_source);
        tombs := tombs || jsonb_build_object('namespace', holders[i], 'tombstone_id', tomb.id);
    END LOOP;
    RETURN memhub_purge_answer(tomb, jsonb_build_object(
        'namespaces', to_jsonb(holders), 'tombstones', tombs,
        'removed', jsonb_build_object('artifacts', (SELECT sum(c) FROM unnest(counts) c)) || blobs,
        'blob_kept', (blobs->>'artifact_blobs')::bigint = 0,
        'tables', jsonb_build_array('artifacts', 'artifact_blobs', 'artifact_chunks')));
END
$$;

-- Everything of one namespace: every table with a `namespace` column (found in the catalog,
-- so a table added later is covered), children before the parents their foreign keys name,
-- then the artifact bytes no other namespace references. Its tombstones stay. Tokens are
-- left as they are (revoking is its own audited action): those naming the namespace are
-- listed in the answer.
CREATE FUNCTION memhub_purge_namespace(p_namespace text, p_reason text, p_actor text,
                                       p_source text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = '' SET memhub.purging = 'on'
AS $$
DECLARE
    t text;
    n bigint;
    total bigint := 0;
    removed jsonb := '{}'::jsonb;
    shas bytea[];
    blobs jsonb;
    tokens jsonb;
    tomb purge_tombstones;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('memhub_lexicon'), hashtext(p_namespace));
    WITH gone AS (DELETE FROM artifacts WHERE namespace = p_namespace RETURNING sha256)
    SELECT array_agg(DISTINCT sha256), count(*) INTO shas, n FROM gone;
    removed := jsonb_build_object('artifacts', n);
    total := n;
    FOR t IN
        SELECT c.relname
          FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'namespace'
                             AND NOT a.attisdropped
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
           AND c.relname <> 'purge_tombstones'
         ORDER BY array_position(ARRAY['embedding_jobs', 'memory_embeddings',
                                       'memory_corroborations', 'memory_revisions',
                                       'session_events'], c.relname::text) NULLS LAST,
                  c.relname
    LOOP
        EXECUTE format('DELETE FROM %I WHERE namespace = $1', t) USING p_namespace;
        GET DIAGNOSTICS n = ROW_COUNT;
        removed := removed || jsonb_build_object(t, n);
        total := total + n;
    END LOOP;
    IF total = 0 THEN
        RETURN NULL;
    END IF;
    blobs := memhub_delete_blobs(coalesce(shas, '{}'));
    removed := removed || blobs;
    SELECT coalesce(jsonb_agg(id ORDER BY id), '[]'::jsonb) INTO tokens
      FROM api_tokens WHERE revoked_at IS NULL AND namespaces @> ARRAY[p_namespace];
    tomb := memhub_purge_record(p_namespace, 'namespace', p_namespace, NULL, removed,
                                p_reason, p_actor, p_source);
    RETURN memhub_purge_answer(tomb, jsonb_build_object(
        'active_tokens_naming_it', tokens,
        'tables', (SELECT jsonb_agg(k) FROM jsonb_object_keys(removed) AS k)));
END
$$;

-- The migrating role's default privileges grant memhub_app EXECUTE on new functions: taken
-- back here from every function of this purge path (memhub_purging stays callable: the guards
-- call it as whichever role writes).
REVOKE ALL ON FUNCTION memhub_delete_blobs(bytea[]),
                       memhub_purge_record(text, text, text, bytea, jsonb, text, text, text),
                       memhub_purge_answer(purge_tombstones, jsonb),
                       memhub_purge_memory(uuid, text, text, text),
                       memhub_purge_handoff(uuid, text, text, text),
                       memhub_purge_session(uuid, text, text, text),
                       memhub_purge_artifact(bytea, text, text, text, text),
                       memhub_purge_namespace(text, text, text, text)
    FROM PUBLIC, memhub_app;
