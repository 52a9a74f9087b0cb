-- Optional per-namespace quotas (storage/postgres/operator/limits.py; docs/operations.md#limits):
-- at most `max_memories` live (ACTIVE) memories, at most `max_bytes` stored bytes. The stored
-- bytes of a namespace are its live memories' content, questions and metadata (as text), and
-- the size of every artifact it references (each reference counts its whole size, though
-- bytes shared with another namespace are stored once). Retired memories and revision history
-- are not counted: they are kept for the audit and leave only with a purge.
--
-- Enforced by the database, on every write path: a trigger on `memories` and one on
-- `artifacts` add each row's change to its namespace's counters in `namespace_quotas` and
-- refuse (check_violation, constraint `namespace_quota`) a change that grows a counter past
-- its limit. The counter's UPDATE takes the quota row's lock until the transaction ends, so
-- the writes of a namespace with a quota queue there one at a time: of two writes racing for
-- the last slot, the second re-reads the row the first committed (EvalPlanQual) and is
-- refused. The refusal aborts the statement, so the whole write rolls back: no revision, no
-- embedding job, no change-feed entry. A namespace without a quota has no row: its writes
-- update nothing and take no lock.
--
-- The counters exist only while a quota does. memhub_set_quota, the one way to set, change or
-- clear a quota, counts the namespace afresh each time under SHARE locks on `memories` and
-- `artifacts`: the counting waits for every write in flight to end and holds new ones back
-- until it commits, so no write falls between the count and the counters.

CREATE TABLE namespace_quotas (
    namespace     text PRIMARY KEY CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    max_memories  integer CHECK (max_memories >= 0),
    max_bytes     bigint CHECK (max_bytes >= 0),
    used_memories bigint NOT NULL DEFAULT 0,
    used_bytes    bigint NOT NULL DEFAULT 0,
    set_by        text NOT NULL CHECK (char_length(set_by) BETWEEN 1 AND 200),
    set_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (max_memories IS NOT NULL OR max_bytes IS NOT NULL)
);
-- A tenant table as github_repo_grants (0035): a token reads its namespaces' quotas (stats);
-- memhub_app may only read it. Only memhub_set_quota and the triggers below write it.
ALTER TABLE namespace_quotas ENABLE ROW LEVEL SECURITY;
ALTER TABLE namespace_quotas FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON namespace_quotas USING (memhub_ns_visible(namespace))
    WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON namespace_quotas AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON namespace_quotas AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON namespace_quotas AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
GRANT SELECT ON namespace_quotas TO memhub_app;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON namespace_quotas FROM memhub_app;

-- What a memory row stores against the byte quota.
CREATE FUNCTION memhub_memory_bytes(p_content text, p_questions text[], p_metadata jsonb)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT octet_length(p_content)::bigint
           + coalesce((SELECT sum(octet_length(q)) FROM unnest(p_questions) AS q), 0)
           + coalesce(octet_length(p_metadata::text), 0)
$$;

-- A namespace's use, counted from its rows: (live memories, stored bytes).
CREATE FUNCTION memhub_namespace_use(p_namespace text, OUT memories bigint, OUT bytes bigint)
LANGUAGE sql STABLE AS $$
    SELECT m.n, m.b + a.b
      FROM (SELECT count(*) AS n,
                   coalesce(sum(memhub_memory_bytes(content, questions, metadata)), 0) AS b
              FROM memories WHERE namespace = p_namespace AND status = 'ACTIVE') AS m,
           (SELECT coalesce(sum(size), 0) AS b
              FROM artifacts WHERE namespace = p_namespace) AS a
$$;

-- Add one row change to a namespace's counters; refuse it when it grows a counter past its
-- limit. A change that does not grow a counter is always taken, so a namespace over a quota
-- lowered below its use can still shrink (forget, supersede, shorten).
CREATE FUNCTION memhub_quota_charge(p_namespace text, p_memories integer, p_bytes bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    q namespace_quotas;
BEGIN
    IF p_memories = 0 AND p_bytes = 0 THEN
        RETURN;
    END IF;
    UPDATE namespace_quotas
       SET used_memories = used_memories + p_memories, used_bytes = used_bytes + p_bytes
     WHERE namespace = p_namespace
    RETURNING * INTO q;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_memories > 0 AND q.max_memories IS NOT NULL AND q.used_memories > q.max_memories THEN
        RAISE EXCEPTION 'namespace % holds % live memories, its quota; nothing was written',
                        p_namespace, q.max_memories
              USING ERRCODE = 'check_violation', CONSTRAINT = 'namespace_quota',
                    DETAIL = json_build_object('limit', 'memories', 'max', q.max_memories,
                                               'used', q.used_memories - p_memories,
                                               'adding', p_memories)::text;
    END IF;
    IF p_bytes > 0 AND q.max_bytes IS NOT NULL AND q.used_bytes > q.max_bytes THEN
        RAISE EXCEPTION 'namespace % would store % bytes, over its quota of %; nothing was '
                        'written', p_namespace, q.used_bytes, q.max_bytes
              USING ERRCODE = 'check_violation', CONSTRAINT = 'namespace_quota',
                    DETAIL = json_build_object('limit', 'bytes', 'max', q.max_bytes,
                                               'used', q.used_bytes - p_bytes,
                                               'adding', p_bytes)::text;
    END IF;
END
$$;

CREATE FUNCTION memhub_quota_memories() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    n integer := 0;
    b bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.status = 'ACTIVE' THEN
        n := n - 1;
        b := b - memhub_memory_bytes(OLD.content, OLD.questions, OLD.metadata);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'ACTIVE' THEN
        n := n + 1;
        b := b + memhub_memory_bytes(NEW.content, NEW.questions, NEW.metadata);
    END IF;
    PERFORM memhub_quota_charge(CASE WHEN TG_OP = 'DELETE' THEN OLD.namespace
                                     ELSE NEW.namespace END, n, b);
    RETURN NULL;
END
$$;

CREATE FUNCTION memhub_quota_artifacts() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memhub_quota_charge(NEW.namespace, 0, NEW.size);
    ELSE
        PERFORM memhub_quota_charge(OLD.namespace, 0, -OLD.size);
    END IF;
    RETURN NULL;
END
$$;

-- AFTER ROW triggers: a row a statement skipped (ON CONFLICT DO NOTHING, a lost compare-and-set)
-- charges nothing. The WHEN condition keeps the updates that change nothing counted (an
-- embedding, a verification) from calling the function at all.
CREATE TRIGGER memories_quota AFTER INSERT OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memhub_quota_memories();
CREATE TRIGGER memories_quota_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status
                       OR NEW.content IS DISTINCT FROM OLD.content
                       OR NEW.questions IS DISTINCT FROM OLD.questions
                       OR NEW.metadata IS DISTINCT FROM OLD.metadata)
    EXECUTE FUNCTION memhub_quota_memories();
CREATE TRIGGER artifacts_quota AFTER INSERT OR DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION memhub_quota_artifacts();

-- Set, change (both limits given anew) or clear (both NULL) a namespace's quota, counting its
-- use afresh; the row as it now is, or NULL once cleared. Only from a transaction scoped to
-- every namespace: the operator's.
CREATE FUNCTION memhub_set_quota(p_namespace text, p_max_memories integer, p_max_bytes bigint,
                                 p_actor text)
RETURNS namespace_quotas LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
    use record;
    q namespace_quotas;
BEGIN
    IF coalesce(current_setting('memhub.namespaces', true), '') <> '*' THEN
        RAISE EXCEPTION 'quotas are set by the operator only'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_max_memories IS NULL AND p_max_bytes IS NULL THEN
        DELETE FROM namespace_quotas WHERE namespace = p_namespace;
        RETURN NULL;
    END IF;
    LOCK TABLE memories, artifacts IN SHARE MODE;
    SELECT * INTO use FROM memhub_namespace_use(p_namespace);
    INSERT INTO namespace_quotas AS x (namespace, max_memories, max_bytes, used_memories,
                                       used_bytes, set_by)
    VALUES (p_namespace, p_max_memories, p_max_bytes, use.memories, use.bytes, p_actor)
    ON CONFLICT (namespace) DO UPDATE
       SET max_memories = excluded.max_memories, max_bytes = excluded.max_bytes,
           used_memories = excluded.used_memories, used_bytes = excluded.used_bytes,
           set_by = excluded.set_by, set_at = now()
    RETURNING x.* INTO q;
    RETURN q;
END
$$;

-- The migrating role's default privileges grant memhub_app EXECUTE on new functions: the charge
-- is the triggers' alone (a caller could otherwise lower its own counters).
REVOKE ALL ON FUNCTION memhub_quota_charge(text, integer, bigint) FROM PUBLIC, memhub_app;
