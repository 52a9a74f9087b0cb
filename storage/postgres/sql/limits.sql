-- The operator's limits (storage/postgres/operator/limits.py): a token's own limits and a
-- namespace's quota (migrations 0041, 0042). Run in transactions scoped '*'.

-- name: set_token_limits
-- An OAuth connection's tokens are replaced every hour: they use the server's defaults.
UPDATE api_tokens
   SET max_in_flight = %(max_in_flight)s, rate_per_minute = %(rate_per_minute)s,
       rate_burst = %(rate_burst)s
 WHERE id = %(id)s AND revoked_at IS NULL AND kind <> 'oauth'
RETURNING id, surface, kind, prefix, namespaces, read_only, label, created_at, revoked_at, replaces,
          tool_profile, max_in_flight, rate_per_minute, rate_burst;

-- name: set_quota
-- NULL namespace: the quota was cleared.
SELECT namespace, max_memories, max_bytes, used_memories, used_bytes, set_by, set_at
  FROM memhub_set_quota(%(namespace)s, %(max_memories)s, %(max_bytes)s, %(actor)s);

-- name: quota
SELECT namespace, max_memories, max_bytes, used_memories, used_bytes, set_by, set_at
  FROM namespace_quotas
 WHERE namespace = %(namespace)s;

-- name: use
-- Counted from the rows: what a quota set now would start from.
SELECT memories AS used_memories, bytes AS used_bytes
  FROM memhub_namespace_use(%(namespace)s);

-- name: list_quotas
SELECT namespace, max_memories, max_bytes, used_memories, used_bytes, set_by, set_at
  FROM namespace_quotas
 ORDER BY namespace
 LIMIT %(limit)s;
