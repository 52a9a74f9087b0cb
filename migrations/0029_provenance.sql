-- Provenance, staleness and feedback on memories (storage/postgres/trust.py).
--
-- Provenance: where a memory came from, on the memory row. `origin` is one of
--   user_stated     a person said it (the client passes it when the user stated it),
--   agent_inferred  an agent concluded it (the default of every tool write),
--   imported        brought in from elsewhere (memhub-admin import --markdown),
--   curated         reviewed and kept by a person or a curation pass;
-- `model` is the writing model when the client names it, `client_info` the MCP client's
-- name/version when the transport carries it, `derived_from` the records it came from
-- ([{"type": memory|session|handoff|artifact, "id"}], each checked to exist in the namespace
-- when written). Memories written before this migration were written through the tools by
-- AI clients: they take origin 'agent_inferred', no model, no sources. Provenance changes only
-- with a new revision (memory_revise may restate it), never on its own.
--
-- Staleness: memory_verifications, append-only, one row per memory_verify (who: the token's
-- surface; when: the database clock; which revision). A memory of a kind with a period in its
-- namespace's profile (`reverify_days`, migration 0026) needs re-verification once the later
-- of its last verification and its current revision is older than that period. A verification
-- never makes a new revision. `live_memories` carries the verdict, so every retrieval path that
-- reads stage 0 returns it.
--
-- Feedback: memory_observations, append-only, one row per observation_log: a client reporting a
-- memory that was wrong, misleading, missing or stale. Its text is screened like any stored
-- text (quarantined when it reads like instructions).
--
-- Both tables are tenant tables: forced row-level security on memhub_ns_visible, the read-only
-- restrictive policies of 0013, rows removed only by a purge (0023): the memory's verifications
-- with it (ON DELETE CASCADE, which only a purge can start), the observations naming it by the
-- trigger below.

ALTER TABLE memories
    ADD COLUMN origin text NOT NULL DEFAULT 'agent_inferred'
        CONSTRAINT memories_origin_check
        CHECK (origin IN ('user_stated', 'agent_inferred', 'imported', 'curated')),
    ADD COLUMN model text
        CONSTRAINT memories_model_size CHECK (model IS NULL OR char_length(model) BETWEEN 1 AND 100),
    ADD COLUMN client_info text
        CONSTRAINT memories_client_info_size
        CHECK (client_info IS NULL OR char_length(client_info) BETWEEN 1 AND 200),
    ADD COLUMN derived_from jsonb NOT NULL DEFAULT '[]'
        CONSTRAINT memories_derived_from_shape
        CHECK (jsonb_typeof(derived_from) = 'array' AND jsonb_array_length(derived_from) <= 20);

-- Provenance moves only with a new revision: a statement that changes where a memory came from
-- must restate it (memory_revise), so its history shows when.
CREATE FUNCTION memories_provenance_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.origin, NEW.model, NEW.client_info, NEW.derived_from)
       IS DISTINCT FROM (OLD.origin, OLD.model, OLD.client_info, OLD.derived_from)
       AND NEW.current_revision <> OLD.current_revision + 1 THEN
        RAISE EXCEPTION 'a memory''s provenance changes only with a new revision'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_provenance_guard
    BEFORE UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_provenance_guard();

CREATE TABLE memory_verifications (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   text NOT NULL,
    memory_id   uuid NOT NULL,
    revision    integer NOT NULL CHECK (revision >= 1),
    verified_by text NOT NULL CHECK (char_length(verified_by) BETWEEN 1 AND 200),
    verified_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id) ON DELETE CASCADE
);
CREATE INDEX memory_verifications_latest ON memory_verifications (memory_id, verified_at DESC);

CREATE TABLE memory_observations (
    id                 uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    seq                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    namespace          text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    kind               text NOT NULL CHECK (kind IN ('wrong', 'misleading', 'missing', 'stale')),
    text               text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
    refs               uuid[] NOT NULL DEFAULT '{}' CHECK (cardinality(refs) <= 20),
    author_client      text NOT NULL CHECK (char_length(author_client) BETWEEN 1 AND 200),
    quarantined        boolean NOT NULL DEFAULT false,
    quarantine_reasons text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_observations_ns_seq ON memory_observations (namespace, seq DESC);
CREATE INDEX memory_observations_refs ON memory_observations USING gin (refs);

-- Append-only, stamped by the database clock (an import restores the recorded time).
CREATE FUNCTION memhub_trust_rows_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT public.memhub_restoring(TG_RELID) THEN
            IF TG_TABLE_NAME = 'memory_verifications' THEN
                NEW.verified_at := now();
            ELSE
                NEW.created_at := now();
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_verifications', 'memory_observations']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW'
                       ' EXECUTE FUNCTION memhub_trust_rows_guard()', t || '_guard', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (memhub_ns_visible(namespace))'
                       ' WITH CHECK (memhub_ns_visible(namespace))', t);
        EXECUTE format('CREATE POLICY read_only_insert ON %I AS RESTRICTIVE FOR INSERT'
                       ' WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_update ON %I AS RESTRICTIVE FOR UPDATE'
                       ' USING (true) WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_delete ON %I AS RESTRICTIVE FOR DELETE'
                       ' USING (memhub_writable())', t);
        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON %I FROM memhub_app', t);
    END LOOP;
END
$$;

-- A purged memory takes the observations that name it: their text is about it.
CREATE FUNCTION memories_purge_observations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM public.memory_observations
     WHERE namespace = OLD.namespace AND refs @> ARRAY[OLD.id];
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_purge_observations
    AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_purge_observations();

-- When a memory was last known good: the later of its last verification and its current
-- revision.
CREATE FUNCTION memhub_fresh_at(p_namespace text, p_id uuid) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT greatest(
        (SELECT max(v.verified_at) FROM memory_verifications v
          WHERE v.memory_id = p_id AND v.namespace = p_namespace),
        (SELECT r.created_at FROM memory_revisions r
          WHERE r.memory_id = p_id AND r.is_current))
$$;

-- Whether an ACTIVE memory is past its kind's re-verification period. No profile, or no period
-- for the kind: never (the profile is looked up first, so such a namespace pays one index probe
-- per memory read and nothing more).
CREATE FUNCTION memhub_needs_reverification(p_namespace text, p_id uuid, p_kind text,
                                            p_status text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT p_status = 'ACTIVE' AND coalesce((
        SELECT memhub_fresh_at(p_namespace, p_id)
               + make_interval(days => (p.profile -> 'reverify_days' ->> p_kind)::int) <= now()
          FROM namespace_profiles p
         WHERE p.namespace = p_namespace
           AND p.profile -> 'reverify_days' ? p_kind), false)
$$;

-- Stage 0 as before (0002), with the verdict as its last column. Replaced, not dropped: the
-- columns before it are unchanged.
CREATE OR REPLACE VIEW live_memories WITH (security_invoker = true) AS
    SELECT m.*,
           memhub_needs_reverification(m.namespace, m.id, m.kind, m.status)
               AS needs_reverification
      FROM memories m
     WHERE m.status = 'ACTIVE'
       AND (m.expires_at IS NULL OR m.expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;
GRANT SELECT, INSERT ON memory_verifications, memory_observations TO memhub_app;
