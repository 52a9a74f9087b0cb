-- Garbage collection: removing what nothing needs any more (storage/postgres/gc.py), on a
-- schedule in every memhub process and on demand (memhub-admin gc [--dry-run]).
--
-- - idempotency_keys older than MEMHUB_IDEMPOTENCY_TTL_SECONDS: a retry sent later than that
--   is a new write;
-- - dead embedding jobs dead for longer than MEMHUB_DEAD_JOB_TTL_SECONDS (a dead job's
--   run_after is the time of its last failure plus at most an hour of backoff); the memory
--   is queued again by the worker's missing-vector scan at its next start, or by backfill;
-- - artifact bytes no namespace references, created longer than MEMHUB_ARTIFACT_GRACE_SECONDS
--   ago (an interrupted upload's leftovers, or content whose last reference went);
-- - expired /admin logouts (0012) and dashboard flashes (0022), login-failure counts already
--   forgiven, and the record of these runs after RUN_HISTORY_DAYS.
--
-- One run at a time across every process on the database: a run holds a transaction-level
-- advisory lock, and another run that cannot take it at once skips (it works behind a
-- transaction pooler too: nothing is left on the session). A scheduled run also skips when
-- another process ran one less than half a period ago. Each kind is removed at most p_batch
-- rows per run (`more` says a kind had more), so a run stays within the statement timeout;
-- a dry run counts everything and removes nothing.

CREATE TABLE gc_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    trigger     text NOT NULL CHECK (char_length(trigger) BETWEEN 1 AND 200),  -- 'scheduled', 'cli:<user>'
    removed     jsonb NOT NULL CHECK (jsonb_typeof(removed) = 'object'),       -- rows per kind
    more        boolean NOT NULL
);
CREATE INDEX gc_runs_finished ON gc_runs (finished_at DESC);
-- Written by memhub_gc only; read by the stats tool.
REVOKE ALL ON gc_runs FROM memhub_app;
GRANT SELECT ON gc_runs TO memhub_app;

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX embedding_jobs_dead ON embedding_jobs (run_after) WHERE status = 'dead';

CREATE FUNCTION memhub_gc(p_dry_run boolean, p_idempotency_ttl interval, p_dead_job_ttl interval,
                          p_artifact_grace interval, p_login_forgive interval, p_batch integer,
                          p_trigger text, p_min_gap interval)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = ''
AS $$
DECLARE
    run_history CONSTANT interval := interval '90 days';
    cap bigint := CASE WHEN p_dry_run THEN NULL ELSE p_batch END;  -- LIMIT NULL: no limit
    last_run timestamptz;
    removed jsonb := '{}'::jsonb;
    more boolean := false;  -- a kind had more than the batch (never in a dry run)
    shas bytea[];
    n bigint;
BEGIN
    IF p_batch IS NULL OR p_batch < 1
       OR least(p_idempotency_ttl, p_dead_job_ttl, p_artifact_grace, p_login_forgive)
          < interval '0' THEN
        RAISE EXCEPTION 'memhub_gc: ages must not be negative and the batch at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_gc')) THEN
        RETURN jsonb_build_object('ran', false, 'reason', 'busy');
    END IF;
    IF p_min_gap IS NOT NULL THEN
        SELECT max(finished_at) INTO last_run FROM gc_runs;
        IF last_run > now() - p_min_gap THEN
            RETURN jsonb_build_object('ran', false, 'reason', 'recent', 'last_run_at', last_run);
        END IF;
    END IF;

    WITH doomed AS (SELECT ctid FROM idempotency_keys
                     WHERE created_at < now() - p_idempotency_ttl LIMIT cap),
         gone AS (DELETE FROM idempotency_keys
                   WHERE NOT p_dry_run AND ctid IN (SELECT ctid FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('idempotency_keys', n);
    more := more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT id FROM embedding_jobs
                     WHERE status = 'dead' AND run_after < now() - p_dead_job_ttl LIMIT cap),
         gone AS (DELETE FROM embedding_jobs
                   WHERE NOT p_dry_run AND id IN (SELECT id FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('dead_embedding_jobs', n);
    more := more OR coalesce(n >= cap, false);

    SELECT coalesce(array_agg(b.sha256), '{}') INTO shas
      FROM (SELECT sha256 FROM artifact_blobs x
             WHERE x.created_at < now() - p_artifact_grace
               AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.sha256 = x.sha256)
             LIMIT cap) b;
    IF p_dry_run THEN
        removed := removed || jsonb_build_object('artifact_blobs', cardinality(shas));
    ELSE
        removed := removed || jsonb_build_object(
            'artifact_blobs', (memhub_delete_blobs(shas)->>'artifact_blobs')::bigint);
    END IF;
    more := more OR coalesce(cardinality(shas) >= cap, false);

    WITH doomed AS (SELECT sid_hash FROM admin_ended_sessions WHERE expires_at < now() LIMIT cap),
         gone AS (DELETE FROM admin_ended_sessions
                   WHERE NOT p_dry_run AND sid_hash IN (SELECT sid_hash FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('admin_ended_sessions', n);
    more := more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT id_hash FROM admin_flash WHERE expires_at < now() LIMIT cap),
         gone AS (DELETE FROM admin_flash
                   WHERE NOT p_dry_run AND id_hash IN (SELECT id_hash FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('admin_flash', n);
    more := more OR coalesce(n >= cap, false);

    -- Forgiven (storage/postgres/admin.py: an hour without a failure) and not locked out.
    WITH doomed AS (SELECT source FROM admin_login_failures
                     WHERE last_at < now() - p_login_forgive
                       AND (locked_until IS NULL OR locked_until < now()) LIMIT cap),
         gone AS (DELETE FROM admin_login_failures
                   WHERE NOT p_dry_run AND source IN (SELECT source FROM doomed)
                     AND last_at < now() - p_login_forgive  -- not if it failed again meanwhile
                   RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('admin_login_failures', n);
    more := more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT id FROM gc_runs WHERE finished_at < now() - run_history LIMIT cap),
         gone AS (DELETE FROM gc_runs
                   WHERE NOT p_dry_run AND id IN (SELECT id FROM doomed) RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    removed := removed || jsonb_build_object('gc_runs', n);
    more := more OR coalesce(n >= cap, false);

    IF NOT p_dry_run THEN
        INSERT INTO gc_runs (trigger, removed, more) VALUES (p_trigger, removed, more);
    END IF;
    RETURN jsonb_build_object('ran', true, 'dry_run', p_dry_run, 'removed', removed,
                              'more', more, 'at', clock_timestamp());
END
$$;
-- The background collector runs as memhub_app: it may call this (and nothing of the purge).
-- What it can remove is what nothing needs, and at most what the ages it is given allow.
REVOKE ALL ON FUNCTION memhub_gc(boolean, interval, interval, interval, interval, integer, text,
                                 interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_gc(boolean, interval, interval, interval, interval, integer,
                                    text, interval) TO memhub_app;
