-- The change feed: what changed in a namespace, for `memory_changes` (storage/postgres/changes.py).
--
-- Every change to a memory (created, revised, superseded, forgotten, expired, quarantined,
-- released, imported), a handoff (saved, taken, imported) or a session (closed, imported) is
-- one row, written by triggers on the tables themselves, so every write path is covered (the
-- tools, the expiry sweep, an import, the purge's relinking) without each one having to
-- remember. The surface is the one the token scope set for the transaction (`memhub.surface`,
-- storage/postgres/scope.py); background work has none and is recorded as 'system'.
--
-- No change is ever missed (docs/change-feed.md). Identity order is allocation order, not
-- commit order: a transaction that took id 10 may commit after one that took id 11, and a
-- reader that read up to 11 would never see 10. So each row records its transaction's id
-- (`xid`, pg_current_xact_id()), and a reader only reads rows of transactions below its
-- snapshot's xmin: every transaction below it has ended, so the rows below it are final, and
-- nothing can appear there later. A reader's position is (xid, id), read in that order.

CREATE TABLE change_feed (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    namespace      text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    what           text NOT NULL CHECK (what IN (
                       'created', 'revised', 'superseded', 'forgotten', 'expired',
                       'quarantined', 'released', 'imported', 'saved', 'taken', 'closed')),
    target_type    text NOT NULL CHECK (target_type IN ('memory', 'handoff', 'session')),
    target_id      uuid NOT NULL,
    revision       integer,
    replacement_id uuid,  -- superseded: the memory that replaced it
    surface        text NOT NULL CHECK (char_length(surface) BETWEEN 1 AND 64),
    at             timestamptz NOT NULL DEFAULT now()
);
-- A reader's keyset, per namespace.
CREATE INDEX change_feed_position ON change_feed (namespace, xid, id);

-- Where retention (memhub_gc) cut each namespace's feed: every row at or before this position
-- is gone, so a cursor behind it would skip changes and is refused (CURSOR_EXPIRED).
CREATE TABLE change_feed_trimmed (
    namespace   text PRIMARY KEY CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    through_xid xid8 NOT NULL,
    through_id  bigint NOT NULL,
    trimmed_at  timestamptz NOT NULL DEFAULT now()
);

-- Tenant tables like the others (0002, 0013): forced row-level security on the namespace and
-- the read-only restrictive policies. The app reads them; it never writes them itself: the
-- feed is written by the triggers below (SECURITY DEFINER) and trimmed by memhub_gc.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['change_feed', 'change_feed_trimmed']
    LOOP
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
        EXECUTE format('REVOKE ALL ON %I FROM memhub_app', t);
        EXECUTE format('GRANT SELECT ON %I TO memhub_app', t);
    END LOOP;
END
$$;

-- The surface the transaction acts for, or 'system' (background work, an operator's command).
CREATE FUNCTION memhub_change_surface() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(nullif(current_setting('memhub.surface', true), ''), 'system')
$$;

CREATE FUNCTION memhub_feed_memories() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    who text := memhub_change_surface();
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO change_feed (namespace, what, target_type, target_id, revision, surface)
        VALUES (NEW.namespace,
                CASE WHEN current_setting('memhub.restoring', true) = 'on' THEN 'imported'
                     ELSE 'created' END,
                'memory', NEW.id, NEW.current_revision, who);
        IF NEW.quarantined AND coalesce(current_setting('memhub.restoring', true), '') <> 'on' THEN
            INSERT INTO change_feed (namespace, what, target_type, target_id, revision, surface)
            VALUES (NEW.namespace, 'quarantined', 'memory', NEW.id, NEW.current_revision, who);
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.current_revision <> OLD.current_revision THEN
        INSERT INTO change_feed (namespace, what, target_type, target_id, revision, surface)
        VALUES (NEW.namespace, 'revised', 'memory', NEW.id, NEW.current_revision, who);
    END IF;
    IF NEW.quarantined <> OLD.quarantined THEN
        INSERT INTO change_feed (namespace, what, target_type, target_id, revision, surface)
        VALUES (NEW.namespace, CASE WHEN NEW.quarantined THEN 'quarantined' ELSE 'released' END,
                'memory', NEW.id, NEW.current_revision, who);
    END IF;
    -- A purge relinking what the purged memory replaced keeps SUPERSEDED and names the new
    -- successor: readers learn it as a supersession.
    IF NEW.status IS DISTINCT FROM OLD.status
       OR NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
        INSERT INTO change_feed (namespace, what, target_type, target_id, revision,
                                 replacement_id, surface)
        VALUES (NEW.namespace,
                CASE NEW.status WHEN 'SUPERSEDED' THEN 'superseded'
                                WHEN 'DELETED' THEN 'forgotten'
                                WHEN 'EXPIRED' THEN 'expired' END,
                'memory', NEW.id, NEW.current_revision, NEW.superseded_by, who);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION memhub_feed_work() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    what text;
    kind text := CASE TG_TABLE_NAME WHEN 'handoffs' THEN 'handoff' ELSE 'session' END;
BEGIN
    IF TG_OP = 'INSERT' THEN
        what := CASE WHEN current_setting('memhub.restoring', true) = 'on' THEN 'imported'
                     WHEN kind = 'handoff' THEN 'saved' END;
    ELSE
        what := CASE NEW.status WHEN 'taken' THEN 'taken' WHEN 'closed' THEN 'closed' END;
    END IF;
    IF what IS NOT NULL THEN
        INSERT INTO change_feed (namespace, what, target_type, target_id, surface)
        VALUES (NEW.namespace, what, kind, NEW.id, memhub_change_surface());
    END IF;
    RETURN NULL;
END
$$;

-- AFTER ROW triggers: a row a statement skipped or a rolled-back write records nothing. The
-- WHEN conditions keep the frequent updates that change nothing a reader follows (a session's
-- event counter, a purge re-deriving lineage) from calling the function at all.
CREATE TRIGGER memories_change_feed_insert
    AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION memhub_feed_memories();
CREATE TRIGGER memories_change_feed_update
    AFTER UPDATE ON memories
    FOR EACH ROW WHEN (NEW.current_revision <> OLD.current_revision
                       OR NEW.quarantined <> OLD.quarantined
                       OR NEW.status IS DISTINCT FROM OLD.status
                       OR NEW.superseded_by IS DISTINCT FROM OLD.superseded_by)
    EXECUTE FUNCTION memhub_feed_memories();
CREATE TRIGGER handoffs_change_feed_insert
    AFTER INSERT ON handoffs
    FOR EACH ROW EXECUTE FUNCTION memhub_feed_work();
CREATE TRIGGER handoffs_change_feed_update
    AFTER UPDATE ON handoffs
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION memhub_feed_work();
CREATE TRIGGER sessions_change_feed_insert
    AFTER INSERT ON sessions
    FOR EACH ROW WHEN (current_setting('memhub.restoring', true) = 'on')
    EXECUTE FUNCTION memhub_feed_work();
CREATE TRIGGER sessions_change_feed_update
    AFTER UPDATE ON sessions
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION memhub_feed_work();
REVOKE ALL ON FUNCTION memhub_feed_memories(), memhub_feed_work() FROM PUBLIC, memhub_app;

-- Retention: remove each namespace's feed rows older than p_retention, as a PREFIX of the
-- reader's (xid, id) order (up to the first row that is not old, and never at or above the
-- snapshot's xmin, where rows may still appear), and move the namespace's trim mark to the
-- last removed position. At most p_batch rows per call; returns the rows removed (counted
-- only, in a dry run) and whether some namespace had more. Called by memhub_gc (below), under
-- its lock, as the owner.
CREATE FUNCTION memhub_trim_change_feed(p_dry_run boolean, p_retention interval,
                                        p_batch integer, OUT removed bigint, OUT more boolean)
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
DECLARE
    horizon xid8 := pg_snapshot_xmin(pg_current_snapshot());
    cutoff timestamptz := now() - p_retention;
    ns text;
    stop_xid xid8;
    stop_id bigint;
    last_xid xid8;
    last_id bigint;
    n bigint;
    budget bigint := CASE WHEN p_dry_run THEN NULL ELSE p_batch END;
BEGIN
    removed := 0;
    more := false;
    -- Each namespace once (a skip scan of the position index).
    FOR ns IN
        WITH RECURSIVE names AS (
            (SELECT namespace FROM change_feed ORDER BY namespace LIMIT 1)
            UNION ALL
            SELECT (SELECT f.namespace FROM change_feed f WHERE f.namespace > names.namespace
                     ORDER BY f.namespace LIMIT 1)
              FROM names WHERE names.namespace IS NOT NULL)
        SELECT namespace FROM names WHERE namespace IS NOT NULL
    LOOP
        EXIT WHEN budget IS NOT NULL AND budget <= 0;
        stop_xid := NULL;
        SELECT f.xid, f.id INTO stop_xid, stop_id FROM change_feed f
         WHERE f.namespace = ns AND (f.at >= cutoff OR f.xid >= horizon)
         ORDER BY f.xid, f.id LIMIT 1;
        IF stop_xid IS NULL THEN
            stop_xid := horizon;
            stop_id := 0;
        END IF;
        IF p_dry_run THEN
            SELECT count(*) INTO n FROM change_feed f
             WHERE f.namespace = ns AND (f.xid, f.id) < (stop_xid, stop_id);
            removed := removed + n;
            CONTINUE;
        END IF;
        last_xid := NULL;
        SELECT p.xid, p.id INTO last_xid, last_id
          FROM (SELECT f.xid, f.id FROM change_feed f
                 WHERE f.namespace = ns AND (f.xid, f.id) < (stop_xid, stop_id)
                 ORDER BY f.xid, f.id LIMIT budget) p
         ORDER BY p.xid DESC, p.id DESC LIMIT 1;
        CONTINUE WHEN last_xid IS NULL;
        DELETE FROM change_feed f
         WHERE f.namespace = ns AND (f.xid, f.id) <= (last_xid, last_id);
        GET DIAGNOSTICS n = ROW_COUNT;
        removed := removed + n;
        budget := budget - n;
        more := more OR budget <= 0;
        INSERT INTO change_feed_trimmed (namespace, through_xid, through_id)
        VALUES (ns, last_xid, last_id)
        ON CONFLICT (namespace) DO UPDATE
            SET through_xid = EXCLUDED.through_xid, through_id = EXCLUDED.through_id,
                trimmed_at = now()
            WHERE (change_feed_trimmed.through_xid, change_feed_trimmed.through_id)
                  < (EXCLUDED.through_xid, EXCLUDED.through_id);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION memhub_trim_change_feed(boolean, interval, integer) FROM PUBLIC, memhub_app;

-- memhub_gc (0024) trims the feed too, under its one-run lock and in its record of the run:
-- the same function with one more age, MEMHUB_CHANGE_FEED_RETENTION_DAYS.
DROP FUNCTION memhub_gc(boolean, interval, interval, interval, interval, integer, text, interval);
CREATE FUNCTION memhub_gc(p_dry_run boolean, p_idempotency_ttl interval, p_dead_job_ttl interval,
                          p_artifact_grace interval, p_login_forgive interval, p_batch integer,
                          p_trigger text, p_min_gap interval, p_change_feed_retention interval)
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
    feed record;
BEGIN
    IF p_batch IS NULL OR p_batch < 1
       OR least(p_idempotency_ttl, p_dead_job_ttl, p_artifact_grace, p_login_forgive,
                p_change_feed_retention)
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

    feed := memhub_trim_change_feed(p_dry_run, p_change_feed_retention, p_batch);
    removed := removed || jsonb_build_object('change_feed', feed.removed);
    more := more OR feed.more;

    IF NOT p_dry_run THEN
        INSERT INTO gc_runs (trigger, removed, more) VALUES (p_trigger, removed, more);
    END IF;
    RETURN jsonb_build_object('ran', true, 'dry_run', p_dry_run, 'removed', removed,
                              'more', more, 'at', clock_timestamp());
END
$$;
REVOKE ALL ON FUNCTION memhub_gc(boolean, interval, interval, interval, interval, integer, text,
                                 interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_gc(boolean, interval, interval, interval, interval, integer,
                                    text, interval, interval) TO memhub_app;
