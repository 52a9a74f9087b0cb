-- Operator views and actions (dashboard and memhub-admin). Run in transactions scoped '*':
-- the operator sees every namespace.

-- name: list_tokens
SELECT id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces
  FROM api_tokens
 ORDER BY revoked_at IS NOT NULL, kind, surface, id DESC
 LIMIT %(limit)s;

-- name: get_token
SELECT id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces
  FROM api_tokens
 WHERE id = %(id)s;

-- name: active_surface_token_for_update
SELECT id, prefix
  FROM api_tokens
 WHERE surface = %(surface)s AND kind = 'surface' AND revoked_at IS NULL
   FOR UPDATE;

-- name: revoke
UPDATE api_tokens
   SET revoked_at = now()
 WHERE id = %(id)s AND revoked_at IS NULL
RETURNING id, surface, kind, prefix, revoked_at;

-- name: insert_token
INSERT INTO api_tokens (surface, kind, token_hash, prefix, namespaces, read_only, label, replaces)
VALUES (%(surface)s, %(kind)s, %(token_hash)s, %(prefix)s, %(namespaces)s, %(read_only)s,
        %(label)s, %(replaces)s)
RETURNING id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces;

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

-- name: record_login_failure
-- A quiet hour forgives earlier failures; past the threshold each failure doubles the lock.
INSERT INTO admin_login_failures AS f (source, failures, last_at)
VALUES (%(source)s, 1, now())
ON CONFLICT (source) DO UPDATE
   SET failures = CASE WHEN f.last_at < now() - make_interval(secs => %(forgive_seconds)s)
                       THEN 1 ELSE f.failures + 1 END,
       last_at = now()
RETURNING failures;

-- name: lock_login_source
UPDATE admin_login_failures
   SET locked_until = now() + make_interval(secs => %(seconds)s)
 WHERE source = %(source)s;

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
