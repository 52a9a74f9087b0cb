-- Garbage collection of the rows that later features keep past their use (storage/postgres/gc.py):
--
-- - OAuth authorization codes an hour after they expire (a used code is kept until then so a
--   replay is recognised; registration prunes them too, but only when a client registers);
-- - OAuth refresh tokens a day after they expire: a used one is kept so that presenting it
--   again revokes its grant (0030), and once it has expired it is refused whatever it was;
-- - handled GitHub webhook deliveries after p_delivery_keep (a redelivery of an older one
--   is then handled again: its verdicts are appended, nothing is lost or doubled in a memory);
-- - spent intent-gate confirmations (gate_nonces) after p_nonce_keep, longer than any
--   confirmation can live (MEMHUB_GATE_CONFIRM_TTL_SECONDS is at most a day), so a spent one
--   has expired before its nonce goes.
--
-- Called right after memhub_gc in the same transaction, so under its one-run lock; its counts
-- join that run's record (gc_runs) instead of memhub_gc being defined a third time.

CREATE INDEX oauth_refresh_tokens_expires ON oauth_refresh_tokens (expires_at);
CREATE INDEX github_deliveries_received ON github_deliveries (received_at);
CREATE INDEX gate_nonces_used ON gate_nonces (used_at);

CREATE FUNCTION memhub_gc_spent(p_dry_run boolean, p_batch integer, p_delivery_keep interval,
                                p_nonce_keep interval)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
SET memhub.namespaces = '*' SET memhub.read_only = ''
AS $$
DECLARE
    cap bigint := CASE WHEN p_dry_run THEN NULL ELSE p_batch END;  -- LIMIT NULL: no limit
    counts jsonb := '{}'::jsonb;
    had_more boolean := false;
    n bigint;
BEGIN
    IF p_batch IS NULL OR p_batch < 1 OR least(p_delivery_keep, p_nonce_keep) < interval '1 day'
    THEN
        RAISE EXCEPTION 'memhub_gc_spent: keep each kind at least a day, the batch at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Re-entrant: memhub_gc took it earlier in this transaction; alone, this waits for no one.
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_gc')) THEN
        RETURN jsonb_build_object('removed', counts, 'more', false);
    END IF;

    WITH doomed AS (SELECT code_hash FROM oauth_codes
                     WHERE expires_at < now() - interval '1 hour' LIMIT cap),
         gone AS (DELETE FROM oauth_codes
                   WHERE NOT p_dry_run AND code_hash IN (SELECT code_hash FROM doomed)
                   RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    counts := counts || jsonb_build_object('oauth_codes', n);
    had_more := had_more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT token_hash FROM oauth_refresh_tokens
                     WHERE expires_at < now() - interval '1 day' LIMIT cap),
         gone AS (DELETE FROM oauth_refresh_tokens
                   WHERE NOT p_dry_run AND token_hash IN (SELECT token_hash FROM doomed)
                   RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    counts := counts || jsonb_build_object('oauth_refresh_tokens', n);
    had_more := had_more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT delivery_id FROM github_deliveries
                     WHERE received_at < now() - p_delivery_keep LIMIT cap),
         gone AS (DELETE FROM github_deliveries
                   WHERE NOT p_dry_run AND delivery_id IN (SELECT delivery_id FROM doomed)
                   RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    counts := counts || jsonb_build_object('github_deliveries', n);
    had_more := had_more OR coalesce(n >= cap, false);

    WITH doomed AS (SELECT namespace, nonce FROM gate_nonces
                     WHERE used_at < now() - p_nonce_keep LIMIT cap),
         gone AS (DELETE FROM gate_nonces g
                   WHERE NOT p_dry_run
                     AND (g.namespace, g.nonce) IN (SELECT namespace, nonce FROM doomed)
                   RETURNING 1)
    SELECT CASE WHEN p_dry_run THEN (SELECT count(*) FROM doomed)
                ELSE (SELECT count(*) FROM gone) END INTO n;
    counts := counts || jsonb_build_object('gate_nonces', n);
    had_more := had_more OR coalesce(n >= cap, false);

    IF NOT p_dry_run THEN
        -- The record memhub_gc wrote in this transaction (started_at is its start), if any.
        UPDATE gc_runs SET removed = gc_runs.removed || counts,
                           more = gc_runs.more OR had_more
         WHERE started_at = now();
    END IF;
    RETURN jsonb_build_object('removed', counts, 'more', had_more);
END
$$;
REVOKE ALL ON FUNCTION memhub_gc_spent(boolean, integer, interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_gc_spent(boolean, integer, interval, interval) TO memhub_app;
