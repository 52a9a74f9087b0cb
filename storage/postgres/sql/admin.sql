-- Operator views and actions (dashboard and memhub-admin). Run in transactions scoped '*':
-- the operator sees every namespace.

-- name: list_tokens
SELECT id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces,
       tool_profile, max_in_flight, rate_per_minute, rate_burst
  FROM api_tokens
 WHERE kind <> 'oauth'  -- OAuth access tokens are listed by their grant (oauth.list_grants)
 ORDER BY revoked_at IS NOT NULL, kind, surface, id DESC
 LIMIT %(limit)s;

-- name: get_token
SELECT id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces,
       tool_profile, max_in_flight, rate_per_minute, rate_burst
  FROM api_tokens
 WHERE id = %(id)s;

-- name: active_surface_token_for_update
-- Its limits pass to its successor.
SELECT id, prefix, max_in_flight, rate_per_minute, rate_burst
  FROM api_tokens
 WHERE surface = %(surface)s AND kind = 'surface' AND revoked_at IS NULL
   FOR UPDATE;

-- name: revoke
UPDATE api_tokens
   SET revoked_at = now()
 WHERE id = %(id)s AND revoked_at IS NULL
RETURNING id, surface, kind, prefix, revoked_at;

-- name: insert_token
INSERT INTO api_tokens (surface, kind, token_hash, prefix, namespaces, read_only, label, replaces,
                        tool_profile, max_in_flight, rate_per_minute, rate_burst)
VALUES (%(surface)s, %(kind)s, %(token_hash)s, %(prefix)s, %(namespaces)s, %(read_only)s,
        %(label)s, %(replaces)s, %(tool_profile)s, %(max_in_flight)s, %(rate_per_minute)s,
        %(rate_burst)s)
RETURNING id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces,
          tool_profile, max_in_flight, rate_per_minute, rate_burst;

-- name: insert_audit
INSERT INTO admin_audit (actor, action, source, token_id, token_prefix, detail)
VALUES (%(actor)s, %(action)s, %(source)s, %(token_id)s, %(token_prefix)s, %(detail)s)
RETURNING id, at;

-- name: recent_audit
SELECT id, at, actor, action, source, token_id, token_prefix, detail
  FROM admin_audit
 ORDER BY at DESC, id DESC
 LIMIT %(limit)s;

-- name: login_retry_after
SELECT greatest(0, ceil(extract(epoch FROM locked_until - now())))::int AS retry_after
  FROM admin_login_failures
 WHERE source = %(source)s AND locked_until > now();

-- name: reserve_login_attempt
-- Counts the attempt BEFORE its password is checked (a success deletes the row), under the
-- row's lock, and the attempt that reaches the threshold sets the lock in the same statement:
-- concurrent guesses from one address queue here, and once the lock is set none of them gets
-- a row back. So at most the free attempts are ever evaluated before the lock, however many
-- arrive at once. A quiet hour forgives earlier failures. The `locks` array holds the lock
-- earned by the n-th failure at index n (its last entry is the cap).
INSERT INTO admin_login_failures AS f (source, failures, last_at, locked_until)
VALUES (%(source)s, 1, now(),
        CASE WHEN (%(locks)s::int[])[1] > 0
             THEN now() + make_interval(secs => (%(locks)s::int[])[1]) END)
ON CONFLICT (source) DO UPDATE
   SET (failures, last_at, locked_until) = (
         SELECT next.n, now(),
                CASE WHEN earned.s > 0 THEN now() + make_interval(secs => earned.s) END
           FROM (SELECT CASE WHEN f.last_at < now() - make_interval(secs => %(forgive_seconds)s)
                             THEN 1 ELSE f.failures + 1 END AS n) AS next,
                LATERAL (SELECT (%(locks)s::int[])[least(next.n, cardinality(%(locks)s::int[]))]
                                AS s) AS earned)
 WHERE f.locked_until IS NULL OR f.locked_until <= now()
RETURNING (%(locks)s::int[])[least(failures, cardinality(%(locks)s::int[]))] AS lock_seconds;

-- name: clear_login_failures
DELETE FROM admin_login_failures WHERE source = %(source)s;

-- name: get_secret
SELECT value FROM admin_secrets WHERE name = %(name)s;

-- name: insert_secret_if_absent
INSERT INTO admin_secrets (name, value) VALUES (%(name)s, %(value)s)
ON CONFLICT (name) DO NOTHING;

-- name: memories_by_namespace_status
SELECT namespace, status, count(*)::int AS n
  FROM memories
 GROUP BY namespace, status
 ORDER BY namespace, status;

-- name: writes_per_surface_per_day
-- Every revision is one write (create, revise, supersede); days are the database's UTC days.
SELECT (created_at AT TIME ZONE 'UTC')::date AS day, author_client AS surface, count(*)::int AS n
  FROM memory_revisions
 WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                     - make_interval(days => %(days)s - 1)
 GROUP BY 1, 2
 ORDER BY 1, 2;

-- name: today_utc
SELECT (now() AT TIME ZONE 'UTC')::date AS today, now() AS now;

-- name: embedding_queue
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'dead')::int AS dead
  FROM embedding_jobs;

-- name: end_session
-- Logging out: the session id is refused from now until its cookie would have expired.
-- Rows of sessions whose cookies have expired anyway are dropped on the way.
WITH gone AS (DELETE FROM admin_ended_sessions WHERE expires_at < now())
INSERT INTO admin_ended_sessions (sid_hash, expires_at)
VALUES (%(sid_hash)s, now() + make_interval(secs => %(ttl_seconds)s))
ON CONFLICT (sid_hash) DO NOTHING;

-- name: session_ended
SELECT EXISTS (SELECT 1 FROM admin_ended_sessions WHERE sid_hash = %(sid_hash)s) AS ended;

-- name: put_flash
-- Expired flashes nobody read are dropped on the way.
WITH gone AS (DELETE FROM admin_flash WHERE expires_at < now())
INSERT INTO admin_flash (id_hash, sid_hash, pad, detail, expires_at)
VALUES (%(id_hash)s, %(sid_hash)s, %(pad)s, %(detail)s,
        now() + make_interval(secs => %(ttl_seconds)s));

-- name: take_flash
-- Read once: the row is gone as it is read.
DELETE FROM admin_flash
 WHERE id_hash = %(id_hash)s AND sid_hash = %(sid_hash)s AND expires_at > now()
RETURNING pad, detail;
