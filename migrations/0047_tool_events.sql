-- The activity log: one row per MCP tool call (storage/activity.py, docs/operations.md,
-- "Activity log").
--
-- What a row holds is what the server knows about a call without reading it: the tool, the
-- namespace it named (when the token may see it), the token's surface and id, whether it
-- succeeded, the error code it was answered with, how long it took and when. Never an argument
-- or a result: the log must be safe to keep and to show an operator whatever clients stored.
-- The process buffers rows and writes them in batches off the request path; `at` is the
-- database's clock, set back by the age of the row in the buffer.

CREATE TABLE tool_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- NULL: the call named no namespace its token may see (a FORBIDDEN call, a malformed
    -- name): kept for the operator, shown to no tenant.
    namespace   text CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    tool        text NOT NULL CHECK (tool ~ '^[a-z0-9_]{1,64}$'),
    surface     text NOT NULL CHECK (char_length(surface) BETWEEN 1 AND 64),
    token_id    bigint,
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'error')),
    error_code  text CHECK (error_code ~ '^[A-Z][A-Z_]{0,39}$'),
    duration_ms real NOT NULL CHECK (duration_ms >= 0),
    at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((outcome = 'error') = (error_code IS NOT NULL))
);
-- A namespace's page, newest first; retention's cut.
CREATE INDEX tool_events_namespace_at ON tool_events (namespace, at DESC, id DESC);
CREATE INDEX tool_events_at ON tool_events (at);

-- A tenant table like the others (0002, 0013): forced row-level security on the namespace, the
-- read-only restrictive policies. The app inserts (its writer runs with every namespace in
-- scope) and reads; it never changes or removes a row: memhub_gc_activity does.
ALTER TABLE tool_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE tool_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tool_events
    USING (memhub_ns_visible(namespace)) WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON tool_events AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON tool_events AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON tool_events AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
REVOKE ALL ON tool_events FROM memhub_app;
GRANT SELECT, INSERT ON tool_events TO memhub_app;

-- Retention: rows older than p_retention go, at most p_batch a call. Called right after
-- memhub_gc in its transaction (storage/postgres/operator/gc.py), as memhub_gc_spent is (0034),
-- and its count joins that run's record.
CREATE FUNCTION memhub_gc_activity(p_dry_run boolean, p_batch integer, p_retention interval)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = ''
AS $$
DECLARE
    cap bigint := CASE WHEN p_dry_run THEN NULL ELSE p_batch END;  -- LIMIT NULL: no limit
    n bigint;
BEGIN
    IF p_batch IS NULL OR p_batch < 1 OR p_retention IS NULL OR p_retention < interval '1 day'
    THEN
        RAISE EXCEPTION 'memhub_gc_activity: keep at least a day, the batch at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Re-entrant: memhub_gc took it earlier in this transaction; alone, this waits for no one.
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_gc')) THEN
        RETURN jsonb_build_object('removed', '{}'::jsonb, 'more', false);
    END IF;
    WITH doomed AS (SELECT id FROM tool_events WHERE at < now() - p_retention LIMIT cap),
         gone AS (DELETE FROM tool_events
                   WHERE NOT p_dry_run AND id IN (SELECT id FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    IF NOT p_dry_run THEN
        UPDATE gc_runs SET removed = gc_runs.removed || jsonb_build_object('tool_events', n),
                           more = gc_runs.more OR coalesce(n >= cap, false)
         WHERE started_at = now();
    END IF;
    RETURN jsonb_build_object('removed', jsonb_build_object('tool_events', n),
                              'more', coalesce(n >= cap, false));
END
$$;
REVOKE ALL ON FUNCTION memhub_gc_activity(boolean, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_gc_activity(boolean, integer, interval) TO memhub_app;
