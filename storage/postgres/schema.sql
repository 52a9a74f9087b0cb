-- The schema that migrations/ add up to, as pg_dump --schema-only prints it for a freshly
-- migrated database (comments, SET lines and the migration bookkeeping table left out).
-- Generated: tests/integration/test_schema_snapshot.py says how to refresh it.

CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

CREATE TYPE public.memhub_memory_then AS (
	id uuid,
	seq bigint,
	namespace text,
	kind text,
	key text,
	metadata jsonb,
	status text,
	superseded_by uuid,
	deleted_reason text,
	revision integer,
	title text,
	content text,
	tags text[],
	questions text[],
	revised_at timestamp with time zone,
	author_client text,
	created_at timestamp with time zone,
	expires_at timestamp with time zone,
	quarantined boolean,
	current_now boolean,
	search_tsv tsvector,
	origin text,
	model text,
	client_info text,
	derived_from jsonb
);

CREATE FUNCTION public.gate_intents_close_once() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.closed_at IS NOT NULL THEN
        RAISE EXCEPTION 'intent % already has an outcome', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.id, NEW.namespace, NEW.text, NEW.kind, NEW.tags, NEW.opened_by, NEW.opened_at)
       IS DISTINCT FROM
       (OLD.id, OLD.namespace, OLD.text, OLD.kind, OLD.tags, OLD.opened_by, OLD.opened_at) THEN
        RAISE EXCEPTION 'an intent is not edited, only closed' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION public.gate_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('memhub_gate', CASE TG_OP WHEN 'DELETE' THEN OLD.namespace
                                               ELSE NEW.namespace END);
    RETURN NULL;
END $$;

CREATE FUNCTION public.memhub_analyze_namespaces() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_analyze_namespaces')) THEN
        RETURN false;
    END IF;
    -- The namespace column only: the estimates that decide join shapes. The tsvector columns'
    -- statistics are costly to gather and are left to autovacuum.
    ANALYZE memories (namespace), memory_embeddings (namespace);
    RETURN true;
END
$$;

CREATE FUNCTION public.memhub_artifact_begin(p_sha bytea, p_size bigint, p_chunk integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    existing artifact_blobs%ROWTYPE;
BEGIN
    INSERT INTO artifact_blobs (sha256, size, chunk_size) VALUES (p_sha, p_size, p_chunk)
    ON CONFLICT (sha256) DO NOTHING;
    IF FOUND THEN
        RETURN true;
    END IF;
    SELECT * INTO existing FROM artifact_blobs WHERE sha256 = p_sha FOR UPDATE;
    IF existing.complete THEN
        RETURN false;
    END IF;
    -- Not complete can only mean an interrupted writer's leftovers: start over.
    DELETE FROM artifact_chunks WHERE sha256 = p_sha;
    UPDATE artifact_blobs SET size = p_size, chunk_size = p_chunk WHERE sha256 = p_sha;
    RETURN true;
END
$$;

CREATE FUNCTION public.memhub_artifact_chunk_put(p_sha bytea, p_idx integer, p_data bytea) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    IF (SELECT complete FROM artifact_blobs WHERE sha256 = p_sha) IS DISTINCT FROM false THEN
        RAISE EXCEPTION 'artifact % is not being uploaded', encode(p_sha, 'hex')
            USING ERRCODE = 'raise_exception';
    END IF;
    INSERT INTO artifact_chunks (sha256, idx, data) VALUES (p_sha, p_idx, p_data);
END
$$;

CREATE FUNCTION public.memhub_artifact_finish(p_sha bytea) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    blob artifact_blobs%ROWTYPE;
    actual_size bigint;
    actual_sha bytea;
BEGIN
    SELECT * INTO blob FROM artifact_blobs WHERE sha256 = p_sha FOR UPDATE;
    IF NOT FOUND OR blob.complete THEN
        RAISE EXCEPTION 'artifact % is not being uploaded', encode(p_sha, 'hex')
            USING ERRCODE = 'raise_exception';
    END IF;
    SELECT coalesce(sum(octet_length(data)), 0),
           sha256(coalesce(string_agg(data, ''::bytea ORDER BY idx), ''::bytea))
      INTO actual_size, actual_sha
      FROM artifact_chunks WHERE sha256 = p_sha;
    IF actual_size <> blob.size OR actual_sha <> p_sha THEN
        RAISE EXCEPTION 'artifact content does not match its sha256'
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE artifact_blobs SET complete = true WHERE sha256 = p_sha;
END
$$;

CREATE FUNCTION public.memhub_artifact_read(p_sha bytea, p_offset bigint, p_length integer) RETURNS bytea
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    blob artifact_blobs%ROWTYPE;
    first_idx integer;
    last_idx integer;
    out bytea := ''::bytea;
    piece record;
    from_byte bigint;
    upto_byte bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM artifacts a
                    WHERE a.sha256 = p_sha AND memhub_ns_visible(a.namespace)) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO blob FROM artifact_blobs WHERE sha256 = p_sha AND complete;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF p_offset < 0 OR p_length < 0 OR p_offset > blob.size THEN
        RAISE EXCEPTION 'range outside the artifact' USING ERRCODE = 'data_exception';
    END IF;
    upto_byte := least(p_offset + p_length, blob.size);
    IF upto_byte <= p_offset THEN
        RETURN out;
    END IF;
    first_idx := (p_offset / blob.chunk_size)::integer;
    last_idx := ((upto_byte - 1) / blob.chunk_size)::integer;
    FOR piece IN SELECT idx, data FROM artifact_chunks
                  WHERE sha256 = p_sha AND idx BETWEEN first_idx AND last_idx ORDER BY idx LOOP
        from_byte := greatest(p_offset - piece.idx::bigint * blob.chunk_size, 0);
        out := out || substring(piece.data FROM (from_byte + 1)::integer
                                FOR (upto_byte - piece.idx::bigint * blob.chunk_size - from_byte)::integer);
    END LOOP;
    RETURN out;
END
$$;

CREATE FUNCTION public.memhub_change_surface() RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(nullif(current_setting('memhub.surface', true), ''), 'system')
$$;

CREATE FUNCTION public.memhub_claim_state(p_namespace text, p_id uuid) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object('repo', c.repo, 'pr', c.pr, 'branch', c.branch,
                                                'sha', c.sha))
           || jsonb_build_object(
               'verdict', coalesce(v.verdict, 'unchecked'),
               'evidence', v.evidence,
               'checked_at', v.checked_at,
               'verdict_age_seconds',
               round(extract(epoch FROM now() - v.checked_at))::bigint)
      FROM memory_claims c
      LEFT JOIN LATERAL (
        SELECT cv.verdict, cv.evidence, cv.checked_at FROM claim_verdicts cv
         WHERE cv.memory_id = c.memory_id AND cv.namespace = c.namespace
         ORDER BY cv.id DESC LIMIT 1) v ON true
     WHERE c.memory_id = p_id AND c.namespace = p_namespace
$$;

CREATE FUNCTION public.memhub_delete_blobs(p_shas bytea[]) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_delete_by_purge_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are removed only by memhub-admin purge', TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE FUNCTION public.memhub_embedding_jobs_notify() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('memhub_embedding_jobs', '');
    RETURN NULL;
END
$$;

CREATE FUNCTION public.memhub_feed_memories() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_feed_purged() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    IF coalesce(current_setting('memhub.purging_namespace', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    DELETE FROM change_feed
     WHERE namespace = OLD.namespace AND (target_id = OLD.id OR replacement_id = OLD.id);
    INSERT INTO change_feed (namespace, what, target_type, target_id, surface)
    VALUES (OLD.namespace, 'purged',
            CASE TG_TABLE_NAME WHEN 'memories' THEN 'memory' WHEN 'handoffs' THEN 'handoff'
                               ELSE 'session' END,
            NULL, memhub_change_surface());
    RETURN NULL;
END
$$;

CREATE FUNCTION public.memhub_feed_work() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_fresh_at(p_namespace text, p_id uuid) RETURNS timestamp with time zone
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT greatest(
        (SELECT max(v.verified_at) FROM memory_verifications v
          WHERE v.memory_id = p_id AND v.namespace = p_namespace),
        (SELECT r.created_at FROM memory_revisions r
          WHERE r.memory_id = p_id AND r.is_current))
$$;

CREATE FUNCTION public.memhub_gc(p_dry_run boolean, p_idempotency_ttl interval, p_dead_job_ttl interval, p_artifact_grace interval, p_login_forgive interval, p_batch integer, p_trigger text, p_min_gap interval, p_change_feed_retention interval) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
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

CREATE FUNCTION public.memhub_gc_activity(p_dry_run boolean, p_batch integer, p_retention interval) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
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

CREATE FUNCTION public.memhub_gc_spent(p_dry_run boolean, p_batch integer, p_delivery_keep interval, p_nonce_keep interval) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
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

CREATE FUNCTION public.memhub_github_grant(p_namespace text, p_repo text, p_allow boolean, p_actor text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    n bigint;
BEGIN
    IF coalesce(current_setting('memhub.namespaces', true), '') <> '*' THEN
        RAISE EXCEPTION 'repository grants are changed by the operator only'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_allow THEN
        INSERT INTO github_repo_grants (namespace, repo, granted_by)
        VALUES (p_namespace, lower(p_repo), p_actor)
        ON CONFLICT (namespace, repo) DO NOTHING;
    ELSE
        DELETE FROM github_repo_grants WHERE namespace = p_namespace AND repo = lower(p_repo);
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$$;

CREATE FUNCTION public.memhub_lexical_candidates(p_namespace text, p_terms tsquery[], p_gates tsquery[], p_floors integer[], p_take integer, p_depth integer, p_kinds text[], p_tags text[]) RETURNS TABLE(id uuid, matched integer)
    LANGUAGE plpgsql STABLE ROWS 100
    SET plan_cache_mode TO 'force_custom_plan'
    SET enable_indexscan TO 'off'
    AS $$
DECLARE
    top int := coalesce(cardinality(p_gates), 0);
    level int;
    room int;
    seen uuid[] := '{}';
    ids uuid[];
    counts int[];
BEGIN
    -- With one level there is nothing after the strictest to stand in for it.
    FOR level IN REVERSE (CASE WHEN top > 1 THEN top - 1 ELSE top END)..1 LOOP
        room := p_take - cardinality(seen);
        SELECT coalesce(array_agg(g.id), '{}'), coalesce(array_agg(g.matched), '{}')
          INTO ids, counts
          FROM memhub_lexical_gate(p_namespace, p_terms, p_gates[level], p_floors[level], seen,
                                   room, p_kinds, p_tags) AS g;
        RETURN QUERY SELECT * FROM unnest(ids, counts);
        seen := seen || ids;
        IF level = top - 1 AND cardinality(ids) >= room THEN
            -- Cut: the memories holding every word may be among those left out.
            SELECT coalesce(array_agg(g.id), '{}'), coalesce(array_agg(g.matched), '{}')
              INTO ids, counts
              FROM memhub_lexical_gate(p_namespace, p_terms, p_gates[top], p_floors[top],
                                       seen, p_take, p_kinds, p_tags) AS g;
            RETURN QUERY SELECT * FROM unnest(ids, counts);
            seen := seen || ids;
        END IF;
        EXIT WHEN cardinality(seen) >= p_depth OR cardinality(seen) >= p_take;
    END LOOP;
END
$$;

CREATE FUNCTION public.memhub_lexical_gate(p_namespace text, p_terms tsquery[], p_gate tsquery, p_floor integer, p_seen uuid[], p_limit integer, p_kinds text[], p_tags text[]) RETURNS TABLE(id uuid, matched integer)
    LANGUAGE sql STABLE ROWS 100
    AS $$
    SELECT h.id, h.matched
      FROM (
        SELECT m.id,
               (SELECT count(*) FROM unnest(p_terms) AS x WHERE m.search_tsv @@ x)::int
                   AS matched
          FROM live_memories m
         WHERE m.namespace = p_namespace
           AND NOT m.quarantined
           AND m.search_ns_tsv @@ p_gate
           AND m.id <> ALL (p_seen)
           AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
           AND (p_tags IS NULL OR m.tag_ns_tsv @@ memhub_tag_gate(p_namespace, p_tags))
        OFFSET 0  -- compute `matched` once per row, below the filter on it
      ) h
     WHERE h.matched >= p_floor
     LIMIT p_limit
$$;

CREATE FUNCTION public.memhub_memories_as_of(p_namespace text, p_at timestamp with time zone) RETURNS SETOF public.memhub_memory_then
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT * FROM memhub_memories_at(p_namespace, p_at) WHERE status = 'ACTIVE'
$$;

CREATE FUNCTION public.memhub_memories_at(p_namespace text, p_at timestamp with time zone) RETURNS SETOF public.memhub_memory_then
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT m.id, m.seq, m.namespace, m.kind, m.key, m.metadata,
           CASE WHEN m.retired_at <= p_at THEN m.status
                WHEN m.expires_at <= p_at THEN 'EXPIRED'
                ELSE 'ACTIVE' END,
           CASE WHEN m.retired_at <= p_at THEN m.superseded_by END,
           CASE WHEN m.retired_at <= p_at THEN m.deleted_reason END,
           r.revision, r.title, r.content, r.tags, r.questions, r.created_at,
           m.author_client, m.created_at, m.expires_at, m.quarantined,
           m.status = 'ACTIVE' AND (m.expires_at IS NULL OR m.expires_at > now())
               AND r.revision = m.current_revision,
           CASE WHEN r.revision = m.current_revision THEN m.search_tsv || m.questions_tsv
                ELSE memhub_revision_tsv(r.title, r.content, r.tags, r.questions, m.lineage)
           END,
           CASE WHEN r.revision = m.current_revision THEN m.origin END,
           CASE WHEN r.revision = m.current_revision THEN m.model END,
           CASE WHEN r.revision = m.current_revision THEN m.client_info END,
           CASE WHEN r.revision = m.current_revision THEN m.derived_from END
      FROM memories m
     CROSS JOIN LATERAL (
        SELECT v.revision, v.title, v.content, v.tags, v.questions, v.created_at
          FROM memory_revisions v
         WHERE v.memory_id = m.id AND v.namespace = m.namespace AND v.created_at <= p_at
         ORDER BY v.revision DESC
         LIMIT 1) r
     WHERE m.namespace = p_namespace
       AND m.created_at <= p_at
$$;

CREATE FUNCTION public.memhub_memory_bytes(p_content text, p_questions text[], p_metadata jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT octet_length(p_content)::bigint
           + coalesce((SELECT sum(octet_length(q)) FROM unnest(p_questions) AS q), 0)
           + coalesce(octet_length(p_metadata::text), 0)
$$;

CREATE FUNCTION public.memhub_namespace_use(p_namespace text, OUT memories bigint, OUT bytes bigint) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    SELECT m.n, m.b + a.b
      FROM (SELECT count(*) AS n,
                   coalesce(sum(memhub_memory_bytes(content, questions, metadata)), 0) AS b
              FROM memories WHERE namespace = p_namespace AND status = 'ACTIVE') AS m,
           (SELECT coalesce(sum(size), 0) AS b
              FROM artifacts WHERE namespace = p_namespace) AS a
$$;

CREATE FUNCTION public.memhub_needs_reverification(p_namespace text, p_id uuid, p_kind text, p_status text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT p_status = 'ACTIVE' AND coalesce((
        SELECT memhub_fresh_at(p_namespace, p_id)
               + make_interval(days => (p.profile -> 'reverify_days' ->> p_kind)::int) <= now()
          FROM namespace_profiles p
         WHERE p.namespace = p_namespace
           AND p.profile -> 'reverify_days' ? p_kind), false)
$$;

CREATE FUNCTION public.memhub_ns_key(ns text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    -- sha256, not md5: md5 is refused on FIPS-mode servers. text -> bytea is a binary
    -- coercion (immutable, unlike convert_to); namespaces are ASCII by CHECK.
    SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/'
$$;

CREATE FUNCTION public.memhub_ns_lexemes(ns text, tsv tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT array_to_tsvector(coalesce(array_agg(k.key || l.lexeme), '{}'))
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tsvector_to_array(tsv)) AS l(lexeme)
     WHERE octet_length(l.lexeme) <= 2000
$$;

CREATE FUNCTION public.memhub_ns_tags(ns text, tags text[]) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT array_to_tsvector(coalesce(array_agg(k.key || t.tag), '{}'))
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tags) AS t(tag)
     WHERE t.tag IS NOT NULL AND t.tag <> '' AND octet_length(t.tag) <= 2000
$$;

CREATE FUNCTION public.memhub_ns_visible(ns text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(current_setting('memhub.namespaces', true), '') = '*'
        OR ns = ANY (string_to_array(nullif(current_setting('memhub.namespaces', true), ''), ','))
$$;

CREATE TABLE public.purge_tombstones (
    id bigint NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    target text NOT NULL,
    content_sha256 bytea,
    purged_at timestamp with time zone DEFAULT now() NOT NULL,
    reason text NOT NULL,
    actor text NOT NULL,
    removed jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT purge_tombstones_actor_check CHECK (((char_length(actor) >= 1) AND (char_length(actor) <= 200))),
    CONSTRAINT purge_tombstones_kind_check CHECK ((kind = ANY (ARRAY['memory'::text, 'handoff'::text, 'session'::text, 'artifact'::text, 'namespace'::text]))),
    CONSTRAINT purge_tombstones_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT purge_tombstones_reason_check CHECK (((char_length(reason) >= 1) AND (char_length(reason) <= 500))),
    CONSTRAINT purge_tombstones_removed_check CHECK ((jsonb_typeof(removed) = 'object'::text)),
    CONSTRAINT purge_tombstones_target_check CHECK (((char_length(target) >= 1) AND (char_length(target) <= 64)))
);

ALTER TABLE ONLY public.purge_tombstones FORCE ROW LEVEL SECURITY;

CREATE FUNCTION public.memhub_purge_answer(tomb public.purge_tombstones, p_extra jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_build_object('kind', tomb.kind, 'target', tomb.target,
                              'namespace', tomb.namespace, 'tombstone_id', tomb.id,
                              'purged_at', tomb.purged_at, 'removed', tomb.removed) || p_extra
$$;

CREATE FUNCTION public.memhub_purge_artifact(p_sha bytea, p_namespace text, p_reason text, p_actor text, p_source text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
    SET "memhub.purging" TO 'on'
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

CREATE FUNCTION public.memhub_purge_handoff(p_id uuid, p_reason text, p_actor text, p_source text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
    SET "memhub.purging" TO 'on'
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

CREATE FUNCTION public.memhub_purge_memory(p_id uuid, p_reason text, p_actor text, p_source text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
    SET "memhub.purging" TO 'on'
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

CREATE FUNCTION public.memhub_purge_namespace(p_namespace text, p_reason text, p_actor text, p_source text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
    SET "memhub.purging" TO 'on'
    SET "memhub.purging_namespace" TO 'on'
    AS $_$
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
$_$;

CREATE FUNCTION public.memhub_purge_record(p_namespace text, p_kind text, p_target text, p_content_sha256 bytea, p_removed jsonb, p_reason text, p_actor text, p_source text) RETURNS public.purge_tombstones
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_purge_session(p_id uuid, p_reason text, p_actor text, p_source text) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    SET "memhub.namespaces" TO '*'
    SET "memhub.read_only" TO ''
    SET "memhub.purging" TO 'on'
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

CREATE FUNCTION public.memhub_purging(tbl regclass) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(current_setting('memhub.purging', true), '') = 'on'
       AND current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = tbl)
$$;

CREATE FUNCTION public.memhub_query_terms(q text) RETURNS tsquery[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(t ORDER BY first_ord), '{}')
      FROM (
        SELECT min(ord) AS first_ord, t
          FROM (
            SELECT s.ord,
                   (SELECT memhub_tsquery_or(CASE WHEN numnode(e.q) > 0 THEN e.q
                                                  ELSE phraseto_tsquery('simple', v) END)
                      FROM unnest(memhub_word_variants(s.w)) AS v,
                           LATERAL (SELECT phraseto_tsquery('english', v) AS q) e) AS t
              FROM regexp_split_to_table(left(q, 1000), '\s+') WITH ORDINALITY AS s(w, ord)
             WHERE numnode(phraseto_tsquery('english', s.w)) > 0
               AND s.ord <= 64
          ) per_word
         WHERE numnode(t) > 0
         GROUP BY t
      ) uniq
$$;

CREATE FUNCTION public.memhub_quota_artifacts() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memhub_quota_charge(NEW.namespace, 0, NEW.size);
    ELSE
        PERFORM memhub_quota_charge(OLD.namespace, 0, -OLD.size);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.memhub_quota_charge(p_namespace text, p_memories integer, p_bytes bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_quota_memories() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_refresh_lexicon(p_namespace text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_docs integer;
    v_avg float8;
    v_seq bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_lexicon'), hashtext(p_namespace)) THEN
        RETURN -1;
    END IF;
    -- Read first: a memory committed while this runs has a larger seq and triggers the next.
    SELECT coalesce(max(seq), 0) INTO v_seq
      FROM memories WHERE namespace = p_namespace AND status = 'ACTIVE';
    SELECT count(*), coalesce(avg(length(search_tsv)), 0) INTO v_docs, v_avg
      FROM live_memories WHERE namespace = p_namespace AND NOT quarantined;
    DELETE FROM lexicon_words WHERE namespace = p_namespace;
    INSERT INTO lexicon_words (namespace, lexeme, ndoc)
    SELECT p_namespace, s.word, s.ndoc
      FROM ts_stat(format('SELECT search_tsv FROM live_memories WHERE namespace = %L'
                          ' AND NOT quarantined', p_namespace)) AS s
     WHERE s.ndoc > 1;
    INSERT INTO lexicon_state (namespace, docs, avg_length, max_seq, refreshed_at)
    VALUES (p_namespace, v_docs, v_avg, v_seq, now())
    ON CONFLICT (namespace) DO UPDATE
       SET docs = EXCLUDED.docs, avg_length = EXCLUDED.avg_length,
           max_seq = EXCLUDED.max_seq, refreshed_at = EXCLUDED.refreshed_at;
    RETURN v_docs;
END
$$;

CREATE FUNCTION public.memhub_restoring(tbl regclass) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE
        WHEN coalesce(current_setting('memhub.restoring', true), '') <> 'on' THEN false
        ELSE pg_has_role(current_user, (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl),
                         'USAGE')
    END
$$;

CREATE FUNCTION public.memhub_revision_tsv(title text, content text, tags text[], questions text[], lineage text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT setweight(to_tsvector('english', memhub_with_parts(title)), 'A')
        || setweight(to_tsvector('simple', memhub_with_parts(title)), 'A')
        || setweight(to_tsvector('english', memhub_with_parts(content)), 'B')
        || setweight(to_tsvector('simple', memhub_with_parts(content)), 'B')
        || setweight(to_tsvector('english', memhub_with_parts(memhub_tags_text(tags))), 'C')
        || setweight(to_tsvector('simple', memhub_with_parts(memhub_tags_text(tags))), 'C')
        || setweight(to_tsvector('english', memhub_with_parts(lineage)), 'D')
        || setweight(to_tsvector('simple', memhub_with_parts(lineage)), 'D')
        || to_tsvector('english', memhub_with_parts(memhub_tags_text(questions)))
        || to_tsvector('simple', memhub_with_parts(memhub_tags_text(questions)))
$$;

CREATE TABLE public.namespace_quotas (
    namespace text NOT NULL,
    max_memories integer,
    max_bytes bigint,
    used_memories bigint DEFAULT 0 NOT NULL,
    used_bytes bigint DEFAULT 0 NOT NULL,
    set_by text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT namespace_quotas_check CHECK (((max_memories IS NOT NULL) OR (max_bytes IS NOT NULL))),
    CONSTRAINT namespace_quotas_max_bytes_check CHECK ((max_bytes >= 0)),
    CONSTRAINT namespace_quotas_max_memories_check CHECK ((max_memories >= 0)),
    CONSTRAINT namespace_quotas_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT namespace_quotas_set_by_check CHECK (((char_length(set_by) >= 1) AND (char_length(set_by) <= 200)))
);

ALTER TABLE ONLY public.namespace_quotas FORCE ROW LEVEL SECURITY;

CREATE FUNCTION public.memhub_set_quota(p_namespace text, p_max_memories integer, p_max_bytes bigint, p_actor text) RETURNS public.namespace_quotas
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_tag_gate(ns text, tags text[]) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT string_agg('''' || replace(replace(k.key || t.tag, '\', '\\'), '''', '''''')
                      || '''', ' & ')::tsquery
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tags) AS t(tag)
     WHERE t.tag IS NOT NULL AND t.tag <> ''
$$;

CREATE FUNCTION public.memhub_tags_text(tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT array_to_string(tags, ' ') $$;

CREATE FUNCTION public.memhub_trim_change_feed(p_dry_run boolean, p_retention interval, p_batch integer, OUT removed bigint, OUT more boolean) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

CREATE FUNCTION public.memhub_trust_rows_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT public.memhub_restoring(TG_RELID) THEN
            IF TG_TABLE_NAME = 'memory_verifications' THEN
                NEW.verified_at := now();
            ELSIF TG_TABLE_NAME = 'claim_verdicts' THEN
                NEW.checked_at := now();
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

CREATE FUNCTION public.memhub_tsquery_lexemes(t tsquery) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(array_agg(DISTINCT replace(m[1], '''''', '''')), '{}')
      FROM regexp_matches(t::text, '''((?:[^'']|'''')*)''', 'g') AS m
$$;

CREATE FUNCTION public.memhub_with_parts(doc text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    parts text;
BEGIN
    IF doc IS NULL OR doc !~ '[./@]\w' THEN
        RETURN coalesce(doc, '');
    END IF;
    SELECT coalesce(string_agg(p.part, ' '), '') INTO parts
      FROM (
        -- Token types of the default parser: 4 email, 6 host, 18 url_path, 19 file. Each
        -- distinct token once (the whole token keeps its count in the text itself), at
        -- most 1,000 of them per text.
        SELECT DISTINCT tokid, token
          FROM ts_parse(3722, doc)
         WHERE tokid IN (4, 6, 18, 19)
         LIMIT 1000
      ) t
     CROSS JOIN LATERAL (
        -- its words
        SELECT w FROM regexp_split_to_table(t.token, '[/.@:?=&#]+') AS w
         WHERE length(w) >= 2
        UNION ALL
        -- a path: every tail, down to its last segment (the file's name)
        SELECT array_to_string(s.segs[i:cardinality(s.segs)], '/')
          FROM (SELECT array_remove(string_to_array(split_part(t.token, '?', 1), '/'), '')
                       AS segs) s,
               generate_series(2, cardinality(s.segs)) AS i
         WHERE t.tokid IN (18, 19) AND cardinality(s.segs) <= 16
        UNION ALL
        -- a dotted name or host: every run of two or more labels short of the whole (a
        -- port is not a label)
        SELECT array_to_string(s.segs[i:i + len - 1], '.')
          FROM (SELECT string_to_array(split_part(t.token, ':', 1), '.') AS segs) s,
               generate_series(2, cardinality(s.segs) - 1) AS len,
               generate_series(1, cardinality(s.segs) - len + 1) AS i
         WHERE t.tokid = 6 AND cardinality(s.segs) BETWEEN 3 AND 6
        UNION ALL
        -- an address: its local part and its domain
        SELECT a FROM unnest(string_to_array(t.token, '@')) AS a WHERE t.tokid = 4
      ) p(part);
    RETURN doc || E'\n' || parts;
END
$$;

CREATE FUNCTION public.memhub_word_variants(w text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT array_remove(ARRAY[
        w,
        nullif(b, w),
        nullif(regexp_replace(b, '(?<=[A-Z0-9]{2})s$', ''), b),
        CASE WHEN b ~ '^[A-Z][A-Z0-9]+$' THEN b || 's' END
    ], NULL)
      FROM (SELECT regexp_replace(w, '[''’](s|d|ll|re|ve|t|m)$', '', 'i') AS b) v
$_$;

CREATE FUNCTION public.memhub_writable() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(current_setting('memhub.read_only', true), '') <> 'on'
$$;

CREATE FUNCTION public.memories_gate_retire() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM namespace_profiles p
                WHERE p.namespace = NEW.namespace AND p.profile ->> 'intent_gate' = 'on')
       AND NOT EXISTS (SELECT 1 FROM gate_nonces n
                        WHERE n.namespace = NEW.namespace AND n.spent_in = pg_current_xact_id())
    THEN
        RAISE EXCEPTION 'memory % is in a namespace with the intent gate on: it is retired only '
                        'with a confirmation spent in the same transaction', NEW.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_gate_retire';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION public.memories_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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
    IF (NEW.title, NEW.content, NEW.tags, NEW.content_hash, NEW.questions)
       IS DISTINCT FROM (OLD.title, OLD.content, OLD.tags, OLD.content_hash, OLD.questions)
       AND (NEW.current_revision <> OLD.current_revision + 1 OR OLD.status <> 'ACTIVE') THEN
        RAISE EXCEPTION 'revisioned columns change only with a new revision of an ACTIVE memory'
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE FUNCTION public.memories_lineage_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.lineage IS DISTINCT FROM OLD.lineage AND NOT public.memhub_purging(TG_RELID) THEN
        RAISE EXCEPTION 'a memory''s lineage is written once, when it is born'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION public.memories_mirror_current_revision() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM memories m JOIN memory_revisions r
            ON r.memory_id = m.id AND r.is_current
         WHERE m.id = NEW.id
           AND r.revision = m.current_revision
           AND r.content = m.content
           AND r.title IS NOT DISTINCT FROM m.title
           AND r.tags = m.tags
           AND r.questions = m.questions) THEN
        RAISE EXCEPTION 'memory % does not mirror its current revision', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION public.memories_provenance_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.memories_purge_observations() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM public.memory_observations
     WHERE namespace = OLD.namespace AND refs @> ARRAY[OLD.id];
    RETURN NULL;
END
$$;

CREATE FUNCTION public.memories_retired_at() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.retired_at := NULL;
        RETURN NEW;
    END IF;
    IF OLD.status IN ('ACTIVE', 'EXPIRED') AND NEW.status IN ('SUPERSEDED', 'DELETED') THEN
        NEW.retired_at := now();
    ELSE
        NEW.retired_at := OLD.retired_at;
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION public.memory_revisions_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION public.memory_revisions_insert_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.created_at := now();
    IF NOT NEW.is_current OR NEW.revision IS DISTINCT FROM
           (SELECT m.current_revision FROM memories m WHERE m.id = NEW.memory_id) THEN
        RAISE EXCEPTION 'a new revision must be current and numbered as the memory''s current revision'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION public.memory_revisions_restore_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    latest integer;
BEGIN
    SELECT m.current_revision INTO latest
      FROM memories m WHERE m.id = NEW.memory_id AND m.namespace = NEW.namespace;
    IF latest IS NULL OR NEW.revision > latest OR NEW.is_current <> (NEW.revision = latest) THEN
        RAISE EXCEPTION 'a restored revision is numbered within its memory''s revisions and '
                        'current exactly when it is the memory''s current revision'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION public.session_events_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'session_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE AGGREGATE public.memhub_tsquery_or(tsquery) (
    SFUNC = tsquery_or,
    STYPE = tsquery
);

CREATE TABLE public.admin_audit (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    source text,
    token_id bigint,
    token_prefix text,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT admin_audit_action_check CHECK ((action ~ '^[a-z][a-z_.]{0,63}$'::text)),
    CONSTRAINT admin_audit_actor_check CHECK (((char_length(actor) >= 1) AND (char_length(actor) <= 200))),
    CONSTRAINT admin_audit_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text)),
    CONSTRAINT admin_audit_source_check CHECK (((source IS NULL) OR (char_length(source) <= 200))),
    CONSTRAINT admin_audit_token_prefix_check CHECK (((token_prefix IS NULL) OR (char_length(token_prefix) <= 16)))
);

ALTER TABLE public.admin_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.admin_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.admin_ended_sessions (
    sid_hash bytea NOT NULL,
    ended_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT admin_ended_sessions_sid_hash_check CHECK ((octet_length(sid_hash) = 32))
);

CREATE TABLE public.admin_flash (
    id_hash bytea NOT NULL,
    sid_hash bytea NOT NULL,
    pad bytea NOT NULL,
    detail jsonb NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT admin_flash_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text)),
    CONSTRAINT admin_flash_id_hash_check CHECK ((octet_length(id_hash) = 32)),
    CONSTRAINT admin_flash_pad_check CHECK (((octet_length(pad) >= 1) AND (octet_length(pad) <= 256))),
    CONSTRAINT admin_flash_sid_hash_check CHECK ((octet_length(sid_hash) = 32))
);

CREATE TABLE public.admin_login_failures (
    source text NOT NULL,
    failures integer NOT NULL,
    last_at timestamp with time zone DEFAULT now() NOT NULL,
    locked_until timestamp with time zone,
    CONSTRAINT admin_login_failures_failures_check CHECK ((failures >= 1)),
    CONSTRAINT admin_login_failures_source_check CHECK ((char_length(source) <= 200))
);

CREATE TABLE public.admin_secrets (
    name text NOT NULL,
    value bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT admin_secrets_name_check CHECK ((name ~ '^[a-z][a-z_.]{0,63}$'::text)),
    CONSTRAINT admin_secrets_value_check CHECK ((octet_length(value) >= 32))
);

CREATE TABLE public.api_tokens (
    id bigint NOT NULL,
    surface text NOT NULL,
    kind text DEFAULT 'surface'::text NOT NULL,
    token_hash bytea NOT NULL,
    prefix text NOT NULL,
    namespaces text[],
    read_only boolean DEFAULT false NOT NULL,
    label text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    replaces bigint,
    tool_profile text DEFAULT 'full'::text NOT NULL,
    expires_at timestamp with time zone,
    oauth_grant_id bigint,
    max_in_flight integer,
    rate_per_minute integer,
    rate_burst integer,
    CONSTRAINT api_tokens_kind_check CHECK ((kind = ANY (ARRAY['surface'::text, 'scoped'::text, 'oauth'::text]))),
    CONSTRAINT api_tokens_label_len CHECK (((label IS NULL) OR (char_length(label) <= 100))),
    CONSTRAINT api_tokens_max_in_flight_check CHECK (((max_in_flight >= 1) AND (max_in_flight <= 1000))),
    CONSTRAINT api_tokens_namespaces_check CHECK (((namespaces IS NULL) OR (cardinality(namespaces) > 0))),
    CONSTRAINT api_tokens_namespaces_len CHECK (((namespaces IS NULL) OR (cardinality(namespaces) <= 64))),
    CONSTRAINT api_tokens_oauth_shape CHECK (((kind = 'oauth'::text) = ((oauth_grant_id IS NOT NULL) AND (expires_at IS NOT NULL)))),
    CONSTRAINT api_tokens_rate_burst_check CHECK (((rate_burst >= 1) AND (rate_burst <= 100000))),
    CONSTRAINT api_tokens_rate_per_minute_check CHECK (((rate_per_minute >= 0) AND (rate_per_minute <= 1000000))),
    CONSTRAINT api_tokens_surface_check CHECK ((surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'::text)),
    CONSTRAINT api_tokens_token_hash_check CHECK ((octet_length(token_hash) = 32)),
    CONSTRAINT api_tokens_tool_profile_check CHECK ((tool_profile = ANY (ARRAY['core'::text, 'full'::text])))
);

ALTER TABLE public.api_tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.api_tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.artifact_blobs (
    sha256 bytea NOT NULL,
    size bigint NOT NULL,
    chunk_size integer NOT NULL,
    complete boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT artifact_blobs_chunk_size_check CHECK ((chunk_size > 0)),
    CONSTRAINT artifact_blobs_sha256_check CHECK ((octet_length(sha256) = 32)),
    CONSTRAINT artifact_blobs_size_check CHECK ((size >= 0))
);

CREATE TABLE public.artifact_chunks (
    sha256 bytea NOT NULL,
    idx integer NOT NULL,
    data bytea NOT NULL,
    CONSTRAINT artifact_chunks_idx_check CHECK ((idx >= 0))
);
ALTER TABLE ONLY public.artifact_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE public.artifacts (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    namespace text NOT NULL,
    sha256 bytea NOT NULL,
    name text NOT NULL,
    media_type text NOT NULL,
    size bigint NOT NULL,
    author_client text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT artifacts_media_type_check CHECK (((char_length(media_type) >= 3) AND (char_length(media_type) <= 200))),
    CONSTRAINT artifacts_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 255))),
    CONSTRAINT artifacts_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT artifacts_size_check CHECK ((size >= 0))
);

ALTER TABLE ONLY public.artifacts FORCE ROW LEVEL SECURITY;

ALTER TABLE public.artifacts ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.artifacts_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.bootstrap_marks (
    token_id bigint NOT NULL,
    namespace text NOT NULL,
    cursor text NOT NULL,
    marked_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT bootstrap_marks_cursor_check CHECK (((char_length(cursor) >= 1) AND (char_length(cursor) <= 200))),
    CONSTRAINT bootstrap_marks_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text))
);

ALTER TABLE ONLY public.bootstrap_marks FORCE ROW LEVEL SECURITY;

CREATE TABLE public.change_feed (
    id bigint NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    namespace text NOT NULL,
    what text NOT NULL,
    target_type text NOT NULL,
    target_id uuid,
    revision integer,
    replacement_id uuid,
    surface text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT change_feed_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT change_feed_purged_has_no_id CHECK (((what = 'purged'::text) = (target_id IS NULL))),
    CONSTRAINT change_feed_surface_check CHECK (((char_length(surface) >= 1) AND (char_length(surface) <= 64))),
    CONSTRAINT change_feed_target_type_check CHECK ((target_type = ANY (ARRAY['memory'::text, 'handoff'::text, 'session'::text]))),
    CONSTRAINT change_feed_what_check CHECK ((what = ANY (ARRAY['created'::text, 'revised'::text, 'superseded'::text, 'forgotten'::text, 'expired'::text, 'quarantined'::text, 'released'::text, 'imported'::text, 'saved'::text, 'taken'::text, 'closed'::text, 'purged'::text])))
);

ALTER TABLE ONLY public.change_feed FORCE ROW LEVEL SECURITY;

ALTER TABLE public.change_feed ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.change_feed_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.change_feed_trimmed (
    namespace text NOT NULL,
    through_xid xid8 NOT NULL,
    through_id bigint NOT NULL,
    trimmed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT change_feed_trimmed_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text))
);

ALTER TABLE ONLY public.change_feed_trimmed FORCE ROW LEVEL SECURITY;

CREATE TABLE public.claim_verdicts (
    id bigint NOT NULL,
    namespace text NOT NULL,
    memory_id uuid NOT NULL,
    verdict text NOT NULL,
    evidence jsonb NOT NULL,
    source text NOT NULL,
    checked_at timestamp with time zone DEFAULT now() NOT NULL,
    observed_at timestamp with time zone,
    CONSTRAINT claim_verdicts_evidence_check CHECK (((jsonb_typeof(evidence) = 'object'::text) AND (octet_length((evidence)::text) <= 2000))),
    CONSTRAINT claim_verdicts_source_check CHECK ((source = ANY (ARRAY['reconcile'::text, 'webhook'::text]))),
    CONSTRAINT claim_verdicts_verdict_check CHECK ((verdict = ANY (ARRAY['current'::text, 'stale'::text, 'unverifiable'::text])))
);

ALTER TABLE ONLY public.claim_verdicts FORCE ROW LEVEL SECURITY;

ALTER TABLE public.claim_verdicts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.claim_verdicts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.embedding_jobs (
    id bigint NOT NULL,
    namespace text NOT NULL,
    memory_id uuid NOT NULL,
    revision integer NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT embedding_jobs_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'dead'::text])))
);

ALTER TABLE ONLY public.embedding_jobs FORCE ROW LEVEL SECURITY;

ALTER TABLE public.embedding_jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.embedding_jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.gate_intents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    namespace text NOT NULL,
    text text NOT NULL,
    kind text,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    opened_by text NOT NULL,
    opened_at timestamp with time zone DEFAULT now() NOT NULL,
    outcome text,
    closed_by text,
    closed_at timestamp with time zone,
    CONSTRAINT gate_intents_check CHECK ((((outcome IS NULL) = (closed_at IS NULL)) AND ((outcome IS NULL) = (closed_by IS NULL)))),
    CONSTRAINT gate_intents_closed_by_check CHECK (((char_length(closed_by) >= 1) AND (char_length(closed_by) <= 200))),
    CONSTRAINT gate_intents_kind_check CHECK (((char_length(kind) >= 1) AND (char_length(kind) <= 64))),
    CONSTRAINT gate_intents_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT gate_intents_opened_by_check CHECK (((char_length(opened_by) >= 1) AND (char_length(opened_by) <= 200))),
    CONSTRAINT gate_intents_outcome_check CHECK (((char_length(outcome) >= 1) AND (char_length(outcome) <= 2000))),
    CONSTRAINT gate_intents_tags_check CHECK ((cardinality(tags) <= 32)),
    CONSTRAINT gate_intents_text_check CHECK (((char_length(text) >= 1) AND (char_length(text) <= 2000)))
);

ALTER TABLE ONLY public.gate_intents FORCE ROW LEVEL SECURITY;

CREATE TABLE public.gate_nonces (
    namespace text NOT NULL,
    nonce text NOT NULL,
    used_at timestamp with time zone DEFAULT now() NOT NULL,
    spent_in xid8 DEFAULT pg_current_xact_id() NOT NULL,
    CONSTRAINT gate_nonces_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT gate_nonces_nonce_check CHECK (((char_length(nonce) >= 16) AND (char_length(nonce) <= 64)))
);

ALTER TABLE ONLY public.gate_nonces FORCE ROW LEVEL SECURITY;

CREATE TABLE public.gate_skills (
    namespace text NOT NULL,
    name text NOT NULL,
    trigger jsonb NOT NULL,
    guidance text NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    updated_by text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT gate_skills_guidance_check CHECK (((char_length(guidance) >= 1) AND (char_length(guidance) <= 4000))),
    CONSTRAINT gate_skills_name_check CHECK ((name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT gate_skills_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT gate_skills_trigger_check CHECK ((octet_length((trigger)::text) <= 4096)),
    CONSTRAINT gate_skills_updated_by_check CHECK (((char_length(updated_by) >= 1) AND (char_length(updated_by) <= 200))),
    CONSTRAINT gate_skills_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY public.gate_skills FORCE ROW LEVEL SECURITY;

CREATE TABLE public.gc_runs (
    id bigint NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    trigger text NOT NULL,
    removed jsonb NOT NULL,
    more boolean NOT NULL,
    CONSTRAINT gc_runs_removed_check CHECK ((jsonb_typeof(removed) = 'object'::text)),
    CONSTRAINT gc_runs_trigger_check CHECK (((char_length(trigger) >= 1) AND (char_length(trigger) <= 200)))
);

ALTER TABLE public.gc_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.gc_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.github_deliveries (
    delivery_id text NOT NULL,
    event text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    body_sha256 bytea,
    CONSTRAINT github_deliveries_body_sha256_check CHECK ((octet_length(body_sha256) = 32)),
    CONSTRAINT github_deliveries_delivery_id_check CHECK (((char_length(delivery_id) >= 1) AND (char_length(delivery_id) <= 100))),
    CONSTRAINT github_deliveries_event_check CHECK (((char_length(event) >= 1) AND (char_length(event) <= 100)))
);

CREATE TABLE public.github_repo_grants (
    namespace text NOT NULL,
    repo text NOT NULL,
    granted_by text NOT NULL,
    granted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT github_repo_grants_granted_by_check CHECK (((char_length(granted_by) >= 1) AND (char_length(granted_by) <= 200))),
    CONSTRAINT github_repo_grants_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT github_repo_grants_repo_check CHECK (((repo ~ '^[a-z0-9][a-z0-9-]{0,38}/[a-z0-9._-]{1,100}$'::text) AND (split_part(repo, '/'::text, 2) <> ALL (ARRAY['.'::text, '..'::text]))))
);

ALTER TABLE ONLY public.github_repo_grants FORCE ROW LEVEL SECURITY;

CREATE TABLE public.handoffs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    namespace text NOT NULL,
    title text NOT NULL,
    body text NOT NULL,
    next_steps text[] DEFAULT '{}'::text[] NOT NULL,
    refs text[] DEFAULT '{}'::text[] NOT NULL,
    for_surface text,
    author_client text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    taken_by text,
    taken_at timestamp with time zone,
    quarantined boolean DEFAULT false NOT NULL,
    quarantine_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT handoffs_body_check CHECK (((char_length(body) >= 1) AND (char_length(body) <= 20000))),
    CONSTRAINT handoffs_check CHECK (((status = 'taken'::text) = ((taken_by IS NOT NULL) AND (taken_at IS NOT NULL)))),
    CONSTRAINT handoffs_check1 CHECK (((status = 'taken'::text) OR ((taken_by IS NULL) AND (taken_at IS NULL)))),
    CONSTRAINT handoffs_for_surface_check CHECK (((for_surface IS NULL) OR (for_surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'::text))),
    CONSTRAINT handoffs_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT handoffs_next_steps_check CHECK ((cardinality(next_steps) <= 50)),
    CONSTRAINT handoffs_refs_check CHECK ((cardinality(refs) <= 50)),
    CONSTRAINT handoffs_status_check CHECK ((status = ANY (ARRAY['open'::text, 'taken'::text]))),
    CONSTRAINT handoffs_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 300)))
);

ALTER TABLE ONLY public.handoffs FORCE ROW LEVEL SECURITY;

ALTER TABLE public.handoffs ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.handoffs_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.idempotency_keys (
    namespace text NOT NULL,
    surface text NOT NULL,
    request_id text NOT NULL,
    operation text NOT NULL,
    request_hash bytea NOT NULL,
    response jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    token_id bigint NOT NULL,
    CONSTRAINT idempotency_keys_request_id_check CHECK (((char_length(request_id) >= 1) AND (char_length(request_id) <= 200)))
);

ALTER TABLE ONLY public.idempotency_keys FORCE ROW LEVEL SECURITY;

CREATE TABLE public.lexicon_state (
    namespace text NOT NULL,
    docs integer NOT NULL,
    avg_length double precision NOT NULL,
    max_seq bigint NOT NULL,
    refreshed_at timestamp with time zone DEFAULT now() NOT NULL,
    analyzed_docs integer,
    analyzed_vectors integer,
    CONSTRAINT lexicon_state_avg_length_check CHECK ((avg_length >= (0)::double precision)),
    CONSTRAINT lexicon_state_docs_check CHECK ((docs >= 0))
);

ALTER TABLE ONLY public.lexicon_state FORCE ROW LEVEL SECURITY;

CREATE TABLE public.lexicon_words (
    namespace text NOT NULL,
    lexeme text NOT NULL,
    ndoc integer NOT NULL,
    CONSTRAINT lexicon_words_ndoc_check CHECK ((ndoc > 1))
);

ALTER TABLE ONLY public.lexicon_words FORCE ROW LEVEL SECURITY;

CREATE TABLE public.memories (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    title text,
    content text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    key text,
    metadata jsonb,
    status text DEFAULT 'ACTIVE'::text NOT NULL,
    superseded_by uuid,
    current_revision integer DEFAULT 1 NOT NULL,
    content_hash bytea NOT NULL,
    author_client text NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    deleted_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    tag_ns_tsv tsvector GENERATED ALWAYS AS (public.memhub_ns_tags(namespace, tags)) STORED,
    lineage text,
    search_tsv tsvector GENERATED ALWAYS AS ((((((((setweight(to_tsvector('english'::regconfig, public.memhub_with_parts(title)), 'A'::"char") || setweight(to_tsvector('simple'::regconfig, public.memhub_with_parts(title)), 'A'::"char")) || setweight(to_tsvector('english'::regconfig, public.memhub_with_parts(content)), 'B'::"char")) || setweight(to_tsvector('simple'::regconfig, public.memhub_with_parts(content)), 'B'::"char")) || setweight(to_tsvector('english'::regconfig, public.memhub_with_parts(public.memhub_tags_text(tags))), 'C'::"char")) || setweight(to_tsvector('simple'::regconfig, public.memhub_with_parts(public.memhub_tags_text(tags))), 'C'::"char")) || setweight(to_tsvector('english'::regconfig, public.memhub_with_parts(lineage)), 'D'::"char")) || setweight(to_tsvector('simple'::regconfig, public.memhub_with_parts(lineage)), 'D'::"char"))) STORED,
    search_ns_tsv tsvector GENERATED ALWAYS AS (public.memhub_ns_lexemes(namespace, (((((((to_tsvector('english'::regconfig, public.memhub_with_parts(title)) || to_tsvector('simple'::regconfig, public.memhub_with_parts(title))) || to_tsvector('english'::regconfig, public.memhub_with_parts(content))) || to_tsvector('simple'::regconfig, public.memhub_with_parts(content))) || to_tsvector('english'::regconfig, public.memhub_with_parts(public.memhub_tags_text(tags)))) || to_tsvector('simple'::regconfig, public.memhub_with_parts(public.memhub_tags_text(tags)))) || to_tsvector('english'::regconfig, public.memhub_with_parts(lineage))) || to_tsvector('simple'::regconfig, public.memhub_with_parts(lineage))))) STORED,
    origin text DEFAULT 'agent_inferred'::text NOT NULL,
    model text,
    client_info text,
    derived_from jsonb DEFAULT '[]'::jsonb NOT NULL,
    questions text[] DEFAULT '{}'::text[] NOT NULL,
    questions_tsv tsvector GENERATED ALWAYS AS ((to_tsvector('english'::regconfig, public.memhub_with_parts(public.memhub_tags_text(questions))) || to_tsvector('simple'::regconfig, public.memhub_with_parts(public.memhub_tags_text(questions))))) STORED,
    questions_ns_tsv tsvector GENERATED ALWAYS AS (public.memhub_ns_lexemes(namespace, (to_tsvector('english'::regconfig, public.memhub_with_parts(public.memhub_tags_text(questions))) || to_tsvector('simple'::regconfig, public.memhub_with_parts(public.memhub_tags_text(questions)))))) STORED,
    retired_at timestamp with time zone,
    CONSTRAINT memories_check CHECK (((status = 'SUPERSEDED'::text) = (superseded_by IS NOT NULL))),
    CONSTRAINT memories_check1 CHECK (((superseded_by IS NULL) OR (superseded_by <> id))),
    CONSTRAINT memories_client_info_size CHECK (((client_info IS NULL) OR ((char_length(client_info) >= 1) AND (char_length(client_info) <= 200)))),
    CONSTRAINT memories_content_check CHECK (((char_length(content) >= 1) AND (char_length(content) <= 100000))),
    CONSTRAINT memories_current_revision_check CHECK ((current_revision >= 1)),
    CONSTRAINT memories_derived_from_shape CHECK (((jsonb_typeof(derived_from) = 'array'::text) AND (jsonb_array_length(derived_from) <= 20))),
    CONSTRAINT memories_key_check CHECK (((key IS NULL) OR ((char_length(key) >= 1) AND (char_length(key) <= 200)))),
    CONSTRAINT memories_kind_check CHECK ((kind = ANY (ARRAY['DECISION'::text, 'FACT'::text, 'CONVENTION'::text, 'NOTE'::text, 'TODO'::text]))),
    CONSTRAINT memories_lineage_size CHECK (((lineage IS NULL) OR (char_length(lineage) <= 8000))),
    CONSTRAINT memories_model_size CHECK (((model IS NULL) OR ((char_length(model) >= 1) AND (char_length(model) <= 100)))),
    CONSTRAINT memories_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT memories_origin_check CHECK ((origin = ANY (ARRAY['user_stated'::text, 'agent_inferred'::text, 'imported'::text, 'curated'::text]))),
    CONSTRAINT memories_retired_at CHECK ((((status = ANY (ARRAY['SUPERSEDED'::text, 'DELETED'::text])) = (retired_at IS NOT NULL)) AND ((retired_at IS NULL) OR (retired_at >= created_at)))),
    CONSTRAINT memories_status_check CHECK ((status = ANY (ARRAY['ACTIVE'::text, 'SUPERSEDED'::text, 'DELETED'::text, 'EXPIRED'::text]))),
    CONSTRAINT memories_tags_check CHECK ((cardinality(tags) <= 32)),
    CONSTRAINT memories_title_check CHECK (((title IS NULL) OR (char_length(title) <= 500)))
);

ALTER TABLE ONLY public.memories FORCE ROW LEVEL SECURITY;

CREATE VIEW public.live_memories WITH (security_invoker='true') AS
 SELECT id,
    seq,
    namespace,
    kind,
    title,
    content,
    tags,
    key,
    metadata,
    status,
    superseded_by,
    current_revision,
    content_hash,
    author_client,
    quarantined,
    deleted_reason,
    created_at,
    updated_at,
    expires_at,
    tag_ns_tsv,
    lineage,
    search_tsv,
    search_ns_tsv,
    origin,
    model,
    client_info,
    derived_from,
    questions,
    questions_tsv,
    questions_ns_tsv,
    public.memhub_needs_reverification(namespace, id, kind, status) AS needs_reverification,
    public.memhub_claim_state(namespace, id) AS claim
   FROM public.memories m
  WHERE ((status = 'ACTIVE'::text) AND ((expires_at IS NULL) OR (expires_at > now())));

CREATE TABLE public.memhub_instance (
    singleton boolean DEFAULT true NOT NULL,
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memhub_instance_singleton_check CHECK (singleton)
);

ALTER TABLE public.memories ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.memories_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.memory_claims (
    namespace text NOT NULL,
    memory_id uuid NOT NULL,
    repo text NOT NULL,
    pr integer,
    branch text,
    sha text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_claims_branch_check CHECK (((char_length(branch) >= 1) AND (char_length(branch) <= 255))),
    CONSTRAINT memory_claims_check CHECK ((((pr IS NOT NULL) AND (branch IS NULL) AND (sha IS NULL)) OR ((pr IS NULL) AND (branch IS NOT NULL) AND (sha IS NOT NULL)))),
    CONSTRAINT memory_claims_pr_check CHECK (((pr >= 1) AND (pr <= 2147483647))),
    CONSTRAINT memory_claims_repo_check CHECK ((repo ~ '^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$'::text)),
    CONSTRAINT memory_claims_sha_check CHECK ((sha ~ '^[0-9a-f]{7,40}$'::text))
);

ALTER TABLE ONLY public.memory_claims FORCE ROW LEVEL SECURITY;

CREATE TABLE public.memory_corroborations (
    id bigint NOT NULL,
    namespace text NOT NULL,
    memory_id uuid NOT NULL,
    author_client text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.memory_corroborations FORCE ROW LEVEL SECURITY;

ALTER TABLE public.memory_corroborations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.memory_corroborations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.memory_embeddings (
    memory_id uuid NOT NULL,
    namespace text NOT NULL,
    revision integer NOT NULL,
    model text NOT NULL,
    embedding public.vector(384) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.memory_embeddings FORCE ROW LEVEL SECURITY;

CREATE TABLE public.memory_observations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    text text NOT NULL,
    refs uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    author_client text NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    quarantine_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_observations_author_client_check CHECK (((char_length(author_client) >= 1) AND (char_length(author_client) <= 200))),
    CONSTRAINT memory_observations_kind_check CHECK ((kind = ANY (ARRAY['wrong'::text, 'misleading'::text, 'missing'::text, 'stale'::text]))),
    CONSTRAINT memory_observations_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT memory_observations_refs_check CHECK ((cardinality(refs) <= 20)),
    CONSTRAINT memory_observations_text_check CHECK (((char_length(text) >= 1) AND (char_length(text) <= 2000)))
);

ALTER TABLE ONLY public.memory_observations FORCE ROW LEVEL SECURITY;

ALTER TABLE public.memory_observations ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.memory_observations_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.memory_question_embeddings (
    memory_id uuid NOT NULL,
    namespace text NOT NULL,
    revision integer NOT NULL,
    ordinal smallint NOT NULL,
    model text NOT NULL,
    embedding public.vector(384) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_question_embeddings_ordinal_check CHECK (((ordinal >= 1) AND (ordinal <= 3)))
);

ALTER TABLE ONLY public.memory_question_embeddings FORCE ROW LEVEL SECURITY;

CREATE TABLE public.memory_revisions (
    memory_id uuid NOT NULL,
    namespace text NOT NULL,
    revision integer NOT NULL,
    title text,
    content text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    author_client text NOT NULL,
    is_current boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    questions text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT memory_revisions_revision_check CHECK ((revision >= 1))
);

ALTER TABLE ONLY public.memory_revisions FORCE ROW LEVEL SECURITY;

CREATE TABLE public.memory_verifications (
    id bigint NOT NULL,
    namespace text NOT NULL,
    memory_id uuid NOT NULL,
    revision integer NOT NULL,
    verified_by text NOT NULL,
    verified_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_verifications_revision_check CHECK ((revision >= 1)),
    CONSTRAINT memory_verifications_verified_by_check CHECK (((char_length(verified_by) >= 1) AND (char_length(verified_by) <= 200)))
);

ALTER TABLE ONLY public.memory_verifications FORCE ROW LEVEL SECURITY;

ALTER TABLE public.memory_verifications ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.memory_verifications_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.namespace_profiles (
    namespace text NOT NULL,
    profile jsonb NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_by text NOT NULL,
    CONSTRAINT namespace_profiles_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT namespace_profiles_profile_check CHECK (((jsonb_typeof(profile) = 'object'::text) AND (octet_length((profile)::text) <= 16384))),
    CONSTRAINT namespace_profiles_updated_by_check CHECK (((char_length(updated_by) >= 1) AND (char_length(updated_by) <= 200))),
    CONSTRAINT namespace_profiles_version_check CHECK ((version >= 1))
);

ALTER TABLE ONLY public.namespace_profiles FORCE ROW LEVEL SECURITY;

CREATE TABLE public.oauth_clients (
    client_id text NOT NULL,
    client_secret text,
    client_name text,
    info jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    registered_from text,
    CONSTRAINT oauth_clients_client_id_check CHECK (((char_length(client_id) >= 1) AND (char_length(client_id) <= 64))),
    CONSTRAINT oauth_clients_client_name_check CHECK (((client_name IS NULL) OR (char_length(client_name) <= 100))),
    CONSTRAINT oauth_clients_client_secret_check CHECK (((client_secret IS NULL) OR (char_length(client_secret) <= 128))),
    CONSTRAINT oauth_clients_info_check CHECK (((jsonb_typeof(info) = 'object'::text) AND (octet_length((info)::text) <= 16384))),
    CONSTRAINT oauth_clients_registered_from_check CHECK (((char_length(registered_from) >= 1) AND (char_length(registered_from) <= 64)))
);

CREATE TABLE public.oauth_codes (
    code_hash bytea NOT NULL,
    grant_id bigint NOT NULL,
    redirect_uri text NOT NULL,
    redirect_given boolean NOT NULL,
    code_challenge text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT oauth_codes_code_challenge_check CHECK ((code_challenge ~ '^[A-Za-z0-9_-]{43,128}$'::text)),
    CONSTRAINT oauth_codes_code_hash_check CHECK ((octet_length(code_hash) = 32)),
    CONSTRAINT oauth_codes_redirect_uri_check CHECK ((char_length(redirect_uri) <= 2000))
);

CREATE TABLE public.oauth_grants (
    id bigint NOT NULL,
    client_id text NOT NULL,
    surface text NOT NULL,
    namespaces text[],
    read_only boolean NOT NULL,
    tool_profile text NOT NULL,
    resource text NOT NULL,
    scopes text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    revoked_why text,
    CONSTRAINT oauth_grants_namespaces_check CHECK (((namespaces IS NULL) OR ((cardinality(namespaces) >= 1) AND (cardinality(namespaces) <= 64)))),
    CONSTRAINT oauth_grants_resource_check CHECK ((char_length(resource) <= 2000)),
    CONSTRAINT oauth_grants_revoked_why_check CHECK (((revoked_why IS NULL) OR (revoked_why ~ '^[a-z_]{1,32}$'::text))),
    CONSTRAINT oauth_grants_surface_check CHECK ((surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'::text)),
    CONSTRAINT oauth_grants_tool_profile_check CHECK ((tool_profile = ANY (ARRAY['core'::text, 'full'::text])))
);

ALTER TABLE public.oauth_grants ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.oauth_grants_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.oauth_refresh_tokens (
    token_hash bytea NOT NULL,
    grant_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT oauth_refresh_tokens_token_hash_check CHECK ((octet_length(token_hash) = 32))
);

ALTER TABLE public.purge_tombstones ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.purge_tombstones_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.session_events (
    namespace text NOT NULL,
    session_id uuid NOT NULL,
    seq bigint NOT NULL,
    event_id text,
    type text NOT NULL,
    payload jsonb NOT NULL,
    request_hash bytea NOT NULL,
    author_client text NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    quarantine_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT session_events_event_id_check CHECK (((event_id IS NULL) OR ((char_length(event_id) >= 1) AND (char_length(event_id) <= 200)))),
    CONSTRAINT session_events_payload_check CHECK ((octet_length((payload)::text) <= 131072)),
    CONSTRAINT session_events_seq_check CHECK ((seq >= 1)),
    CONSTRAINT session_events_type_check CHECK ((type ~ '^[a-z0-9][a-z0-9_.:-]{0,63}$'::text))
);

ALTER TABLE ONLY public.session_events FORCE ROW LEVEL SECURITY;

CREATE TABLE public.sessions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    namespace text NOT NULL,
    title text NOT NULL,
    author_client text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    next_seq bigint DEFAULT 0 NOT NULL,
    quarantined boolean DEFAULT false NOT NULL,
    quarantine_reasons text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    closed_at timestamp with time zone,
    closed_by text,
    CONSTRAINT sessions_check CHECK (((status = 'closed'::text) = (closed_at IS NOT NULL))),
    CONSTRAINT sessions_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT sessions_next_seq_check CHECK ((next_seq >= 0)),
    CONSTRAINT sessions_status_check CHECK ((status = ANY (ARRAY['open'::text, 'closed'::text]))),
    CONSTRAINT sessions_title_check CHECK (((char_length(title) >= 1) AND (char_length(title) <= 300)))
);

ALTER TABLE ONLY public.sessions FORCE ROW LEVEL SECURITY;

ALTER TABLE public.sessions ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.sessions_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.tool_events (
    id bigint NOT NULL,
    namespace text,
    tool text NOT NULL,
    surface text NOT NULL,
    token_id bigint,
    outcome text NOT NULL,
    error_code text,
    duration_ms real NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tool_events_check CHECK (((outcome = 'error'::text) = (error_code IS NOT NULL))),
    CONSTRAINT tool_events_duration_ms_check CHECK ((duration_ms >= (0)::double precision)),
    CONSTRAINT tool_events_error_code_check CHECK ((error_code ~ '^[A-Z][A-Z_]{0,39}$'::text)),
    CONSTRAINT tool_events_namespace_check CHECK ((namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'::text)),
    CONSTRAINT tool_events_outcome_check CHECK ((outcome = ANY (ARRAY['ok'::text, 'error'::text]))),
    CONSTRAINT tool_events_surface_check CHECK (((char_length(surface) >= 1) AND (char_length(surface) <= 64))),
    CONSTRAINT tool_events_tool_check CHECK ((tool ~ '^[a-z0-9_]{1,64}$'::text))
);

ALTER TABLE ONLY public.tool_events FORCE ROW LEVEL SECURITY;

ALTER TABLE public.tool_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tool_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY public.admin_audit
    ADD CONSTRAINT admin_audit_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.admin_ended_sessions
    ADD CONSTRAINT admin_ended_sessions_pkey PRIMARY KEY (sid_hash);

ALTER TABLE ONLY public.admin_flash
    ADD CONSTRAINT admin_flash_pkey PRIMARY KEY (id_hash);

ALTER TABLE ONLY public.admin_login_failures
    ADD CONSTRAINT admin_login_failures_pkey PRIMARY KEY (source);

ALTER TABLE ONLY public.admin_secrets
    ADD CONSTRAINT admin_secrets_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.artifact_blobs
    ADD CONSTRAINT artifact_blobs_pkey PRIMARY KEY (sha256);

ALTER TABLE ONLY public.artifact_chunks
    ADD CONSTRAINT artifact_chunks_pkey PRIMARY KEY (sha256, idx);

ALTER TABLE ONLY public.artifacts
    ADD CONSTRAINT artifacts_namespace_sha256_name_key UNIQUE (namespace, sha256, name);

ALTER TABLE ONLY public.artifacts
    ADD CONSTRAINT artifacts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.artifacts
    ADD CONSTRAINT artifacts_seq_key UNIQUE (seq);

ALTER TABLE ONLY public.bootstrap_marks
    ADD CONSTRAINT bootstrap_marks_pkey PRIMARY KEY (token_id, namespace);

ALTER TABLE ONLY public.change_feed
    ADD CONSTRAINT change_feed_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.change_feed_trimmed
    ADD CONSTRAINT change_feed_trimmed_pkey PRIMARY KEY (namespace);

ALTER TABLE ONLY public.claim_verdicts
    ADD CONSTRAINT claim_verdicts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.embedding_jobs
    ADD CONSTRAINT embedding_jobs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.gate_intents
    ADD CONSTRAINT gate_intents_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.gate_nonces
    ADD CONSTRAINT gate_nonces_pkey PRIMARY KEY (namespace, nonce);

ALTER TABLE ONLY public.gate_skills
    ADD CONSTRAINT gate_skills_pkey PRIMARY KEY (namespace, name);

ALTER TABLE ONLY public.gc_runs
    ADD CONSTRAINT gc_runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.github_deliveries
    ADD CONSTRAINT github_deliveries_pkey PRIMARY KEY (delivery_id);

ALTER TABLE ONLY public.github_repo_grants
    ADD CONSTRAINT github_repo_grants_pkey PRIMARY KEY (namespace, repo);

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_namespace_id_key UNIQUE (namespace, id);

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.handoffs
    ADD CONSTRAINT handoffs_seq_key UNIQUE (seq);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (namespace, token_id, request_id);

ALTER TABLE ONLY public.lexicon_state
    ADD CONSTRAINT lexicon_state_pkey PRIMARY KEY (namespace);

ALTER TABLE ONLY public.lexicon_words
    ADD CONSTRAINT lexicon_words_pkey PRIMARY KEY (namespace, lexeme);

ALTER TABLE ONLY public.memhub_instance
    ADD CONSTRAINT memhub_instance_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_namespace_id_key UNIQUE (namespace, id);

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_namespace_seq_key UNIQUE (namespace, seq);

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.memory_claims
    ADD CONSTRAINT memory_claims_pkey PRIMARY KEY (memory_id);

ALTER TABLE public.memory_claims
    ADD CONSTRAINT memory_claims_repo_name CHECK ((split_part(repo, '/'::text, 2) <> ALL (ARRAY['.'::text, '..'::text]))) NOT VALID;

ALTER TABLE ONLY public.memory_corroborations
    ADD CONSTRAINT memory_corroborations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.memory_embeddings
    ADD CONSTRAINT memory_embeddings_pkey PRIMARY KEY (memory_id);

ALTER TABLE ONLY public.memory_observations
    ADD CONSTRAINT memory_observations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.memory_observations
    ADD CONSTRAINT memory_observations_seq_key UNIQUE (seq);

ALTER TABLE ONLY public.memory_question_embeddings
    ADD CONSTRAINT memory_question_embeddings_pkey PRIMARY KEY (memory_id, ordinal);

ALTER TABLE ONLY public.memory_revisions
    ADD CONSTRAINT memory_revisions_pkey PRIMARY KEY (memory_id, revision);

ALTER TABLE ONLY public.memory_verifications
    ADD CONSTRAINT memory_verifications_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.namespace_profiles
    ADD CONSTRAINT namespace_profiles_pkey PRIMARY KEY (namespace);

ALTER TABLE ONLY public.namespace_quotas
    ADD CONSTRAINT namespace_quotas_pkey PRIMARY KEY (namespace);

ALTER TABLE ONLY public.oauth_clients
    ADD CONSTRAINT oauth_clients_pkey PRIMARY KEY (client_id);

ALTER TABLE ONLY public.oauth_codes
    ADD CONSTRAINT oauth_codes_pkey PRIMARY KEY (code_hash);

ALTER TABLE ONLY public.oauth_grants
    ADD CONSTRAINT oauth_grants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.oauth_refresh_tokens
    ADD CONSTRAINT oauth_refresh_tokens_pkey PRIMARY KEY (token_hash);

ALTER TABLE ONLY public.purge_tombstones
    ADD CONSTRAINT purge_tombstones_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.session_events
    ADD CONSTRAINT session_events_pkey PRIMARY KEY (session_id, seq);

ALTER TABLE ONLY public.session_events
    ADD CONSTRAINT session_events_session_id_event_id_key UNIQUE (session_id, event_id);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_namespace_id_key UNIQUE (namespace, id);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_seq_key UNIQUE (seq);

ALTER TABLE ONLY public.tool_events
    ADD CONSTRAINT tool_events_pkey PRIMARY KEY (id);

CREATE INDEX admin_audit_at ON public.admin_audit USING btree (at DESC, id DESC);

CREATE INDEX admin_ended_sessions_expiry ON public.admin_ended_sessions USING btree (expires_at);

CREATE INDEX admin_flash_expiry ON public.admin_flash USING btree (expires_at);

CREATE INDEX api_tokens_oauth_grant ON public.api_tokens USING btree (oauth_grant_id) WHERE (oauth_grant_id IS NOT NULL);

CREATE UNIQUE INDEX api_tokens_one_active_surface ON public.api_tokens USING btree (surface) WHERE ((revoked_at IS NULL) AND (kind = 'surface'::text));

CREATE INDEX artifacts_ns_seq ON public.artifacts USING btree (namespace, seq DESC);

CREATE INDEX artifacts_sha ON public.artifacts USING btree (sha256);

CREATE INDEX bootstrap_marks_namespace ON public.bootstrap_marks USING btree (namespace);

CREATE INDEX change_feed_position ON public.change_feed USING btree (namespace, xid, id);

CREATE INDEX claim_verdicts_latest ON public.claim_verdicts USING btree (memory_id, id DESC);

CREATE INDEX claim_verdicts_namespace ON public.claim_verdicts USING btree (namespace);

CREATE INDEX claim_verdicts_observed ON public.claim_verdicts USING btree (memory_id, observed_at DESC) WHERE (observed_at IS NOT NULL);

CREATE INDEX embedding_jobs_dead ON public.embedding_jobs USING btree (run_after) WHERE (status = 'dead'::text);

CREATE INDEX embedding_jobs_due ON public.embedding_jobs USING btree (run_after, id) WHERE (status = 'pending'::text);

CREATE INDEX embedding_jobs_fair ON public.embedding_jobs USING btree (namespace, run_after, id) WHERE (status = 'pending'::text);

CREATE INDEX embedding_jobs_memory ON public.embedding_jobs USING btree (memory_id);

CREATE INDEX gate_intents_namespace ON public.gate_intents USING btree (namespace, opened_at DESC);

CREATE INDEX gate_nonces_spent_in ON public.gate_nonces USING btree (spent_in);

CREATE INDEX gate_nonces_used ON public.gate_nonces USING btree (used_at);

CREATE INDEX gc_runs_finished ON public.gc_runs USING btree (finished_at DESC);

CREATE UNIQUE INDEX github_deliveries_body ON public.github_deliveries USING btree (body_sha256);

CREATE INDEX github_deliveries_received ON public.github_deliveries USING btree (received_at);

CREATE INDEX github_repo_grants_repo ON public.github_repo_grants USING btree (repo);

CREATE INDEX handoffs_ns_status_seq ON public.handoffs USING btree (namespace, status, seq DESC);

CREATE INDEX idempotency_keys_created ON public.idempotency_keys USING btree (created_at);

CREATE UNIQUE INDEX memories_active_content ON public.memories USING btree (namespace, content_hash) WHERE (status = 'ACTIVE'::text);

CREATE UNIQUE INDEX memories_active_key ON public.memories USING btree (namespace, key) WHERE ((status = 'ACTIVE'::text) AND (key IS NOT NULL));

CREATE INDEX memories_expiring ON public.memories USING btree (expires_at) WHERE ((status = 'ACTIVE'::text) AND (expires_at IS NOT NULL));

CREATE INDEX memories_key_prefix ON public.memories USING btree (namespace, key text_pattern_ops) WHERE (key IS NOT NULL);

CREATE INDEX memories_live_recent ON public.memories USING btree (namespace, updated_at DESC, seq DESC) WHERE (status = 'ACTIVE'::text);

CREATE INDEX memories_ns_lexemes ON public.memories USING gin (search_ns_tsv) WITH (fastupdate=off);

CREATE INDEX memories_ns_status_seq ON public.memories USING btree (namespace, status, seq DESC);

CREATE INDEX memories_ns_tags ON public.memories USING gin (tag_ns_tsv) WITH (fastupdate=off);

CREATE INDEX memories_question_lexemes ON public.memories USING gin (questions_ns_tsv) WITH (fastupdate=off);

CREATE INDEX memories_superseded_by ON public.memories USING btree (superseded_by) WHERE (superseded_by IS NOT NULL);

CREATE INDEX memory_claims_branch ON public.memory_claims USING btree (lower(repo), branch) WHERE (branch IS NOT NULL);

CREATE INDEX memory_claims_namespace ON public.memory_claims USING btree (namespace);

CREATE INDEX memory_claims_pr ON public.memory_claims USING btree (lower(repo), pr) WHERE (pr IS NOT NULL);

CREATE UNIQUE INDEX memory_corroborations_once ON public.memory_corroborations USING btree (memory_id, author_client);

CREATE INDEX memory_embeddings_hnsw ON public.memory_embeddings USING hnsw (embedding public.vector_cosine_ops);

CREATE INDEX memory_embeddings_model ON public.memory_embeddings USING btree (model);

CREATE INDEX memory_embeddings_ns ON public.memory_embeddings USING btree (namespace);

CREATE INDEX memory_observations_ns_seq ON public.memory_observations USING btree (namespace, seq DESC);

CREATE INDEX memory_observations_refs ON public.memory_observations USING gin (refs);

CREATE INDEX memory_question_embeddings_hnsw ON public.memory_question_embeddings USING hnsw (embedding public.vector_cosine_ops);

CREATE INDEX memory_question_embeddings_ns ON public.memory_question_embeddings USING btree (namespace);

CREATE UNIQUE INDEX memory_revisions_one_current ON public.memory_revisions USING btree (memory_id) WHERE is_current;

CREATE INDEX memory_verifications_latest ON public.memory_verifications USING btree (memory_id, verified_at DESC);

CREATE INDEX oauth_clients_created ON public.oauth_clients USING btree (created_at);

CREATE INDEX oauth_clients_source ON public.oauth_clients USING btree (registered_from, created_at) WHERE (registered_from IS NOT NULL);

CREATE INDEX oauth_codes_expires ON public.oauth_codes USING btree (expires_at);

CREATE INDEX oauth_grants_client ON public.oauth_grants USING btree (client_id);

CREATE INDEX oauth_refresh_tokens_expires ON public.oauth_refresh_tokens USING btree (expires_at);

CREATE INDEX oauth_refresh_tokens_grant ON public.oauth_refresh_tokens USING btree (grant_id);

CREATE INDEX purge_tombstones_target ON public.purge_tombstones USING btree (namespace, kind, target);

CREATE INDEX sessions_ns_seq ON public.sessions USING btree (namespace, seq DESC);

CREATE INDEX tool_events_at ON public.tool_events USING btree (at);

CREATE INDEX tool_events_namespace_at ON public.tool_events USING btree (namespace, at DESC, id DESC);

CREATE TRIGGER artifacts_purge_only BEFORE DELETE ON public.artifacts FOR EACH ROW EXECUTE FUNCTION public.memhub_delete_by_purge_only();

CREATE TRIGGER artifacts_quota AFTER INSERT OR DELETE ON public.artifacts FOR EACH ROW EXECUTE FUNCTION public.memhub_quota_artifacts();

CREATE TRIGGER claim_verdicts_guard BEFORE INSERT OR DELETE OR UPDATE ON public.claim_verdicts FOR EACH ROW EXECUTE FUNCTION public.memhub_trust_rows_guard();

CREATE TRIGGER embedding_jobs_notify AFTER INSERT ON public.embedding_jobs FOR EACH STATEMENT EXECUTE FUNCTION public.memhub_embedding_jobs_notify();

CREATE TRIGGER gate_intents_close_once BEFORE UPDATE ON public.gate_intents FOR EACH ROW EXECUTE FUNCTION public.gate_intents_close_once();

CREATE TRIGGER gate_skills_notify AFTER INSERT OR DELETE OR UPDATE ON public.gate_skills FOR EACH ROW EXECUTE FUNCTION public.gate_notify();

CREATE TRIGGER handoffs_change_feed_insert AFTER INSERT ON public.handoffs FOR EACH ROW EXECUTE FUNCTION public.memhub_feed_work();

CREATE TRIGGER handoffs_change_feed_purged AFTER DELETE ON public.handoffs FOR EACH ROW EXECUTE FUNCTION public.memhub_feed_purged();

CREATE TRIGGER handoffs_change_feed_update AFTER UPDATE ON public.handoffs FOR EACH ROW WHEN ((new.status IS DISTINCT FROM old.status)) EXECUTE FUNCTION public.memhub_feed_work();

CREATE TRIGGER handoffs_purge_only BEFORE DELETE ON public.handoffs FOR EACH ROW EXECUTE FUNCTION public.memhub_delete_by_purge_only();

CREATE TRIGGER memories_change_feed_insert AFTER INSERT ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memhub_feed_memories();

CREATE TRIGGER memories_change_feed_purged AFTER DELETE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memhub_feed_purged();

CREATE TRIGGER memories_change_feed_update AFTER UPDATE ON public.memories FOR EACH ROW WHEN (((new.current_revision <> old.current_revision) OR (new.quarantined <> old.quarantined) OR (new.status IS DISTINCT FROM old.status) OR (new.superseded_by IS DISTINCT FROM old.superseded_by))) EXECUTE FUNCTION public.memhub_feed_memories();

CREATE TRIGGER memories_gate_retire BEFORE UPDATE OF status ON public.memories FOR EACH ROW WHEN (((old.status = ANY (ARRAY['ACTIVE'::text, 'EXPIRED'::text])) AND (new.status = ANY (ARRAY['SUPERSEDED'::text, 'DELETED'::text])))) EXECUTE FUNCTION public.memories_gate_retire();

CREATE TRIGGER memories_guard BEFORE INSERT OR UPDATE ON public.memories FOR EACH ROW WHEN ((NOT public.memhub_restoring('public.memories'::regclass))) EXECUTE FUNCTION public.memories_guard();

CREATE TRIGGER memories_lineage_guard BEFORE UPDATE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memories_lineage_guard();

CREATE CONSTRAINT TRIGGER memories_mirror_current_revision AFTER INSERT OR UPDATE ON public.memories DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.memories_mirror_current_revision();

CREATE TRIGGER memories_provenance_guard BEFORE UPDATE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memories_provenance_guard();

CREATE TRIGGER memories_purge_observations AFTER DELETE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memories_purge_observations();

CREATE TRIGGER memories_purge_only BEFORE DELETE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memhub_delete_by_purge_only();

CREATE TRIGGER memories_quota AFTER INSERT OR DELETE ON public.memories FOR EACH ROW EXECUTE FUNCTION public.memhub_quota_memories();

CREATE TRIGGER memories_quota_update AFTER UPDATE ON public.memories FOR EACH ROW WHEN (((new.status IS DISTINCT FROM old.status) OR (new.content IS DISTINCT FROM old.content) OR (new.questions IS DISTINCT FROM old.questions) OR (new.metadata IS DISTINCT FROM old.metadata))) EXECUTE FUNCTION public.memhub_quota_memories();

CREATE TRIGGER memories_retired_at BEFORE INSERT OR UPDATE ON public.memories FOR EACH ROW WHEN ((NOT public.memhub_restoring('public.memories'::regclass))) EXECUTE FUNCTION public.memories_retired_at();

CREATE TRIGGER memory_claims_guard BEFORE INSERT OR DELETE OR UPDATE ON public.memory_claims FOR EACH ROW EXECUTE FUNCTION public.memhub_trust_rows_guard();

CREATE TRIGGER memory_observations_guard BEFORE INSERT OR DELETE OR UPDATE ON public.memory_observations FOR EACH ROW EXECUTE FUNCTION public.memhub_trust_rows_guard();

CREATE TRIGGER memory_revisions_append_only BEFORE DELETE OR UPDATE ON public.memory_revisions FOR EACH ROW EXECUTE FUNCTION public.memory_revisions_append_only();

CREATE TRIGGER memory_revisions_insert_guard BEFORE INSERT ON public.memory_revisions FOR EACH ROW WHEN ((NOT public.memhub_restoring('public.memory_revisions'::regclass))) EXECUTE FUNCTION public.memory_revisions_insert_guard();

CREATE TRIGGER memory_revisions_restore_guard BEFORE INSERT ON public.memory_revisions FOR EACH ROW WHEN (public.memhub_restoring('public.memory_revisions'::regclass)) EXECUTE FUNCTION public.memory_revisions_restore_guard();

CREATE TRIGGER memory_verifications_guard BEFORE INSERT OR DELETE OR UPDATE ON public.memory_verifications FOR EACH ROW EXECUTE FUNCTION public.memhub_trust_rows_guard();

CREATE TRIGGER namespace_profiles_gate_notify AFTER INSERT OR DELETE OR UPDATE ON public.namespace_profiles FOR EACH ROW EXECUTE FUNCTION public.gate_notify();

CREATE TRIGGER session_events_append_only BEFORE DELETE OR UPDATE ON public.session_events FOR EACH ROW EXECUTE FUNCTION public.session_events_append_only();

CREATE TRIGGER sessions_change_feed_insert AFTER INSERT ON public.sessions FOR EACH ROW WHEN ((current_setting('memhub.restoring'::text, true) = 'on'::text)) EXECUTE FUNCTION public.memhub_feed_work();

CREATE TRIGGER sessions_change_feed_purged AFTER DELETE ON public.sessions FOR EACH ROW EXECUTE FUNCTION public.memhub_feed_purged();

CREATE TRIGGER sessions_change_feed_update AFTER UPDATE ON public.sessions FOR EACH ROW WHEN ((new.status IS DISTINCT FROM old.status)) EXECUTE FUNCTION public.memhub_feed_work();

CREATE TRIGGER sessions_purge_only BEFORE DELETE ON public.sessions FOR EACH ROW EXECUTE FUNCTION public.memhub_delete_by_purge_only();

ALTER TABLE ONLY public.admin_audit
    ADD CONSTRAINT admin_audit_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.api_tokens(id);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_oauth_grant_id_fkey FOREIGN KEY (oauth_grant_id) REFERENCES public.oauth_grants(id);

ALTER TABLE ONLY public.api_tokens
    ADD CONSTRAINT api_tokens_replaces_fkey FOREIGN KEY (replaces) REFERENCES public.api_tokens(id);

ALTER TABLE ONLY public.artifact_chunks
    ADD CONSTRAINT artifact_chunks_sha256_fkey FOREIGN KEY (sha256) REFERENCES public.artifact_blobs(sha256);

ALTER TABLE ONLY public.artifacts
    ADD CONSTRAINT artifacts_sha256_fkey FOREIGN KEY (sha256) REFERENCES public.artifact_blobs(sha256);

ALTER TABLE ONLY public.bootstrap_marks
    ADD CONSTRAINT bootstrap_marks_token_id_fkey FOREIGN KEY (token_id) REFERENCES public.api_tokens(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.claim_verdicts
    ADD CONSTRAINT claim_verdicts_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id) ON DELETE CASCADE;

ALTER TABLE ONLY public.embedding_jobs
    ADD CONSTRAINT embedding_jobs_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id);

ALTER TABLE ONLY public.memories
    ADD CONSTRAINT memories_superseded_by_fk FOREIGN KEY (namespace, superseded_by) REFERENCES public.memories(namespace, id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY public.memory_claims
    ADD CONSTRAINT memory_claims_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id) ON DELETE CASCADE;

ALTER TABLE ONLY public.memory_corroborations
    ADD CONSTRAINT memory_corroborations_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id);

ALTER TABLE ONLY public.memory_embeddings
    ADD CONSTRAINT memory_embeddings_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id);

ALTER TABLE ONLY public.memory_question_embeddings
    ADD CONSTRAINT memory_question_embeddings_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id) ON DELETE CASCADE;

ALTER TABLE ONLY public.memory_revisions
    ADD CONSTRAINT memory_revisions_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id);

ALTER TABLE ONLY public.memory_verifications
    ADD CONSTRAINT memory_verifications_namespace_memory_id_fkey FOREIGN KEY (namespace, memory_id) REFERENCES public.memories(namespace, id) ON DELETE CASCADE;

ALTER TABLE ONLY public.oauth_codes
    ADD CONSTRAINT oauth_codes_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES public.oauth_grants(id);

ALTER TABLE ONLY public.oauth_grants
    ADD CONSTRAINT oauth_grants_client_id_fkey FOREIGN KEY (client_id) REFERENCES public.oauth_clients(client_id);

ALTER TABLE ONLY public.oauth_refresh_tokens
    ADD CONSTRAINT oauth_refresh_tokens_grant_id_fkey FOREIGN KEY (grant_id) REFERENCES public.oauth_grants(id);

ALTER TABLE ONLY public.session_events
    ADD CONSTRAINT session_events_namespace_session_id_fkey FOREIGN KEY (namespace, session_id) REFERENCES public.sessions(namespace, id);

ALTER TABLE public.artifact_blobs ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.artifact_chunks ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.artifacts ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.bootstrap_marks ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.change_feed ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.change_feed_trimmed ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.claim_verdicts ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.embedding_jobs ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.gate_intents ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.gate_nonces ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.gate_skills ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.github_repo_grants ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.handoffs ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.idempotency_keys ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.lexicon_state ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.lexicon_words ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memories ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_claims ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_corroborations ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_embeddings ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_observations ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_question_embeddings ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_revisions ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.memory_verifications ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.namespace_profiles ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.namespace_quotas ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.purge_tombstones ENABLE ROW LEVEL SECURITY;

CREATE POLICY read_only_delete ON public.artifacts AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.bootstrap_marks AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.change_feed AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.change_feed_trimmed AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.claim_verdicts AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.embedding_jobs AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.gate_intents AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.gate_nonces AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.gate_skills AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.github_repo_grants AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.handoffs AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.idempotency_keys AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.lexicon_state AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.lexicon_words AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memories AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_claims AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_corroborations AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_embeddings AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_observations AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_question_embeddings AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_revisions AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.memory_verifications AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.namespace_profiles AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.namespace_quotas AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.purge_tombstones AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.session_events AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.sessions AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_delete ON public.tool_events AS RESTRICTIVE FOR DELETE USING (public.memhub_writable());

CREATE POLICY read_only_insert ON public.artifacts AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.bootstrap_marks AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.change_feed AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.change_feed_trimmed AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.claim_verdicts AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.embedding_jobs AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.gate_intents AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.gate_nonces AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.gate_skills AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.github_repo_grants AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.handoffs AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.idempotency_keys AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.lexicon_state AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.lexicon_words AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memories AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_claims AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_corroborations AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_embeddings AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_observations AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_question_embeddings AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_revisions AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.memory_verifications AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.namespace_profiles AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.namespace_quotas AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.purge_tombstones AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.session_events AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.sessions AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_insert ON public.tool_events AS RESTRICTIVE FOR INSERT WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.artifacts AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.bootstrap_marks AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.change_feed AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.change_feed_trimmed AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.claim_verdicts AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.embedding_jobs AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.gate_intents AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.gate_nonces AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.gate_skills AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.github_repo_grants AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.handoffs AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.idempotency_keys AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.lexicon_state AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.lexicon_words AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memories AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_claims AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_corroborations AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_embeddings AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_observations AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_question_embeddings AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_revisions AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.memory_verifications AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.namespace_profiles AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.namespace_quotas AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.purge_tombstones AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.session_events AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.sessions AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

CREATE POLICY read_only_update ON public.tool_events AS RESTRICTIVE FOR UPDATE USING (true) WITH CHECK (public.memhub_writable());

ALTER TABLE public.session_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.sessions ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.artifacts USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.bootstrap_marks USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.change_feed USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.change_feed_trimmed USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.claim_verdicts USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.embedding_jobs USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.gate_intents USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.gate_nonces USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.gate_skills USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.github_repo_grants USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.handoffs USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.idempotency_keys USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.lexicon_state USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.lexicon_words USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memories USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_claims USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_corroborations USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_embeddings USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_observations USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_question_embeddings USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_revisions USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.memory_verifications USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.namespace_profiles USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.namespace_quotas USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.purge_tombstones USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.session_events USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.sessions USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

CREATE POLICY tenant_isolation ON public.tool_events USING (public.memhub_ns_visible(namespace)) WITH CHECK (public.memhub_ns_visible(namespace));

ALTER TABLE public.tool_events ENABLE ROW LEVEL SECURITY;

GRANT USAGE ON SCHEMA public TO memhub_app;

GRANT ALL ON FUNCTION public.gate_intents_close_once() TO memhub_app;

GRANT ALL ON FUNCTION public.gate_notify() TO memhub_app;

GRANT ALL ON FUNCTION public.gin_btree_consistent(internal, smallint, anyelement, integer, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_anyenum(anyenum, anyenum, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_bit(bit, bit, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_bool(boolean, boolean, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_bpchar(character, character, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_bytea(bytea, bytea, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_char("char", "char", smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_cidr(cidr, cidr, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_date(date, date, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_float4(real, real, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_float8(double precision, double precision, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_inet(inet, inet, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_int2(smallint, smallint, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_int4(integer, integer, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_int8(bigint, bigint, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_interval(interval, interval, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_macaddr(macaddr, macaddr, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_macaddr8(macaddr8, macaddr8, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_money(money, money, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_name(name, name, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_numeric(numeric, numeric, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_oid(oid, oid, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_text(text, text, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_time(time without time zone, time without time zone, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_timestamp(timestamp without time zone, timestamp without time zone, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_timestamptz(timestamp with time zone, timestamp with time zone, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_timetz(time with time zone, time with time zone, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_uuid(uuid, uuid, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_compare_prefix_varbit(bit varying, bit varying, smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_enum_cmp(anyenum, anyenum) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_anyenum(anyenum, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_bit(bit, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_bool(boolean, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_bpchar(character, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_bytea(bytea, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_char("char", internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_cidr(cidr, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_date(date, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_float4(real, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_float8(double precision, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_inet(inet, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_int2(smallint, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_int4(integer, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_int8(bigint, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_interval(interval, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_macaddr(macaddr, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_macaddr8(macaddr8, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_money(money, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_name(name, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_numeric(numeric, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_oid(oid, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_text(text, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_time(time without time zone, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_timestamp(timestamp without time zone, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_timestamptz(timestamp with time zone, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_timetz(time with time zone, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_uuid(uuid, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_query_varbit(bit varying, internal, smallint, internal, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_anyenum(anyenum, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_bit(bit, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_bool(boolean, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_bpchar(character, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_bytea(bytea, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_char("char", internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_cidr(cidr, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_date(date, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_float4(real, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_float8(double precision, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_inet(inet, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_int2(smallint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_int4(integer, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_int8(bigint, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_interval(interval, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_macaddr(macaddr, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_macaddr8(macaddr8, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_money(money, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_name(name, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_numeric(numeric, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_oid(oid, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_text(text, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_time(time without time zone, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_timestamp(timestamp without time zone, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_timestamptz(timestamp with time zone, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_timetz(time with time zone, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_uuid(uuid, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_extract_value_varbit(bit varying, internal) TO memhub_app;

GRANT ALL ON FUNCTION public.gin_numeric_cmp(numeric, numeric) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_analyze_namespaces() FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_analyze_namespaces() TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_artifact_begin(p_sha bytea, p_size bigint, p_chunk integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_artifact_begin(p_sha bytea, p_size bigint, p_chunk integer) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_artifact_chunk_put(p_sha bytea, p_idx integer, p_data bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_artifact_chunk_put(p_sha bytea, p_idx integer, p_data bytea) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_artifact_finish(p_sha bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_artifact_finish(p_sha bytea) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_artifact_read(p_sha bytea, p_offset bigint, p_length integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_artifact_read(p_sha bytea, p_offset bigint, p_length integer) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_change_surface() TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_claim_state(p_namespace text, p_id uuid) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_delete_blobs(p_shas bytea[]) FROM PUBLIC;

GRANT ALL ON FUNCTION public.memhub_delete_by_purge_only() TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_embedding_jobs_notify() TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_feed_memories() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_feed_purged() FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_feed_work() FROM PUBLIC;

GRANT ALL ON FUNCTION public.memhub_fresh_at(p_namespace text, p_id uuid) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_gc(p_dry_run boolean, p_idempotency_ttl interval, p_dead_job_ttl interval, p_artifact_grace interval, p_login_forgive interval, p_batch integer, p_trigger text, p_min_gap interval, p_change_feed_retention interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_gc(p_dry_run boolean, p_idempotency_ttl interval, p_dead_job_ttl interval, p_artifact_grace interval, p_login_forgive interval, p_batch integer, p_trigger text, p_min_gap interval, p_change_feed_retention interval) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_gc_activity(p_dry_run boolean, p_batch integer, p_retention interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_gc_activity(p_dry_run boolean, p_batch integer, p_retention interval) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_gc_spent(p_dry_run boolean, p_batch integer, p_delivery_keep interval, p_nonce_keep interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memhub_gc_spent(p_dry_run boolean, p_batch integer, p_delivery_keep interval, p_nonce_keep interval) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_github_grant(p_namespace text, p_repo text, p_allow boolean, p_actor text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_lexical_candidates(p_namespace text, p_terms tsquery[], p_gates tsquery[], p_floors integer[], p_take integer, p_depth integer, p_kinds text[], p_tags text[]) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_lexical_gate(p_namespace text, p_terms tsquery[], p_gate tsquery, p_floor integer, p_seen uuid[], p_limit integer, p_kinds text[], p_tags text[]) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_memories_as_of(p_namespace text, p_at timestamp with time zone) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_memories_at(p_namespace text, p_at timestamp with time zone) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_memory_bytes(p_content text, p_questions text[], p_metadata jsonb) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_namespace_use(p_namespace text, OUT memories bigint, OUT bytes bigint) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_needs_reverification(p_namespace text, p_id uuid, p_kind text, p_status text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_ns_key(ns text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_ns_lexemes(ns text, tsv tsvector) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_ns_tags(ns text, tags text[]) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_ns_visible(ns text) TO memhub_app;

GRANT SELECT ON TABLE public.purge_tombstones TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_purge_answer(tomb public.purge_tombstones, p_extra jsonb) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_artifact(p_sha bytea, p_namespace text, p_reason text, p_actor text, p_source text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_handoff(p_id uuid, p_reason text, p_actor text, p_source text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_memory(p_id uuid, p_reason text, p_actor text, p_source text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_namespace(p_namespace text, p_reason text, p_actor text, p_source text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_record(p_namespace text, p_kind text, p_target text, p_content_sha256 bytea, p_removed jsonb, p_reason text, p_actor text, p_source text) FROM PUBLIC;

REVOKE ALL ON FUNCTION public.memhub_purge_session(p_id uuid, p_reason text, p_actor text, p_source text) FROM PUBLIC;

GRANT ALL ON FUNCTION public.memhub_purging(tbl regclass) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_query_terms(q text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_quota_artifacts() TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_quota_charge(p_namespace text, p_memories integer, p_bytes bigint) FROM PUBLIC;

GRANT ALL ON FUNCTION public.memhub_quota_memories() TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_refresh_lexicon(p_namespace text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_restoring(tbl regclass) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_revision_tsv(title text, content text, tags text[], questions text[], lineage text) TO memhub_app;

GRANT SELECT ON TABLE public.namespace_quotas TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_set_quota(p_namespace text, p_max_memories integer, p_max_bytes bigint, p_actor text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_tag_gate(ns text, tags text[]) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_tags_text(tags text[]) TO memhub_app;

REVOKE ALL ON FUNCTION public.memhub_trim_change_feed(p_dry_run boolean, p_retention interval, p_batch integer, OUT removed bigint, OUT more boolean) FROM PUBLIC;

GRANT ALL ON FUNCTION public.memhub_trust_rows_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_tsquery_lexemes(t tsquery) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_with_parts(doc text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_word_variants(w text) TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_writable() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_gate_retire() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_lineage_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_mirror_current_revision() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_provenance_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_purge_observations() TO memhub_app;

GRANT ALL ON FUNCTION public.memories_retired_at() TO memhub_app;

GRANT ALL ON FUNCTION public.memory_revisions_append_only() TO memhub_app;

GRANT ALL ON FUNCTION public.memory_revisions_insert_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.memory_revisions_restore_guard() TO memhub_app;

GRANT ALL ON FUNCTION public.session_events_append_only() TO memhub_app;

GRANT ALL ON FUNCTION public.memhub_tsquery_or(tsquery) TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.admin_audit TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.admin_audit_id_seq TO memhub_app;

GRANT SELECT,INSERT,DELETE ON TABLE public.admin_ended_sessions TO memhub_app;

GRANT SELECT,INSERT,DELETE ON TABLE public.admin_flash TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.admin_login_failures TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.admin_secrets TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.api_tokens TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.api_tokens_id_seq TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.artifacts TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.artifacts_seq_seq TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.bootstrap_marks TO memhub_app;

GRANT SELECT ON TABLE public.change_feed TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.change_feed_id_seq TO memhub_app;

GRANT SELECT ON TABLE public.change_feed_trimmed TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.claim_verdicts TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.claim_verdicts_id_seq TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.embedding_jobs TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.embedding_jobs_id_seq TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.gate_intents TO memhub_app;

GRANT SELECT ON TABLE public.gate_nonces TO memhub_app;

GRANT INSERT(namespace) ON TABLE public.gate_nonces TO memhub_app;

GRANT INSERT(nonce) ON TABLE public.gate_nonces TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.gate_skills TO memhub_app;

GRANT SELECT ON TABLE public.gc_runs TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.gc_runs_id_seq TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.github_deliveries TO memhub_app;

GRANT SELECT ON TABLE public.github_repo_grants TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.handoffs TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.handoffs_seq_seq TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.idempotency_keys TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.lexicon_state TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.lexicon_words TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.memories TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.live_memories TO memhub_app;

GRANT SELECT ON TABLE public.memhub_instance TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.memories_seq_seq TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.memory_claims TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.memory_corroborations TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.memory_corroborations_id_seq TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.memory_embeddings TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.memory_observations TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.memory_observations_seq_seq TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.memory_question_embeddings TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.memory_revisions TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.memory_verifications TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.memory_verifications_id_seq TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.namespace_profiles TO memhub_app;

GRANT SELECT,INSERT,DELETE ON TABLE public.oauth_clients TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.oauth_codes TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.oauth_grants TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.oauth_grants_id_seq TO memhub_app;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.oauth_refresh_tokens TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.purge_tombstones_id_seq TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.session_events TO memhub_app;

GRANT SELECT,INSERT,UPDATE ON TABLE public.sessions TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.sessions_seq_seq TO memhub_app;

GRANT SELECT,INSERT ON TABLE public.tool_events TO memhub_app;

GRANT SELECT,USAGE ON SEQUENCE public.tool_events_id_seq TO memhub_app;

ALTER DEFAULT PRIVILEGES FOR ROLE <migrating role> IN SCHEMA public GRANT SELECT,USAGE ON SEQUENCES TO memhub_app;

ALTER DEFAULT PRIVILEGES FOR ROLE <migrating role> IN SCHEMA public GRANT ALL ON FUNCTIONS TO memhub_app;

ALTER DEFAULT PRIVILEGES FOR ROLE <migrating role> IN SCHEMA public GRANT SELECT,INSERT,DELETE,UPDATE ON TABLES TO memhub_app;
