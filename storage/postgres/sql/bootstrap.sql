-- session_bootstrap's own reads and its mark (storage/postgres/work/bootstrap.py; migration 0031).
-- Every statement names the namespace where it has one; row-level security confines it too.

-- name: identity
SELECT i.id AS instance_id,
       current_setting('server_version') AS server_version,
       (SELECT max(version) FROM schema_migrations) AS migration_level,
       now() AS database_time
  FROM memhub_instance i;

-- name: open_handoffs
-- Peeked, never taken: a bootstrap shows what is waiting, handoff_load picks it up.
SELECT h.*, count(*) OVER () AS total
  FROM handoffs h
 WHERE h.namespace = %(namespace)s
   AND h.status = 'open'
   AND NOT h.quarantined
   AND (h.for_surface IS NULL OR h.for_surface = %(surface)s)
 ORDER BY h.seq DESC
 LIMIT %(limit)s;

-- name: get_mark
-- An OAuth client's access token is replaced at every refresh (a new api_tokens row of the same
-- grant), so the mark is the newest one of the token's family: the client's next bootstrap
-- still reports only what changed since its last, not the whole feed again.
SELECT m.cursor, m.marked_at
  FROM bootstrap_marks m
 WHERE m.namespace = %(namespace)s
   AND m.token_id IN (SELECT t.id FROM api_tokens t
                       WHERE t.id = %(token_id)s
                          OR t.oauth_grant_id = (SELECT o.oauth_grant_id FROM api_tokens o
                                                  WHERE o.id = %(token_id)s))
 ORDER BY m.marked_at DESC
 LIMIT 1;

-- name: save_mark
INSERT INTO bootstrap_marks (token_id, namespace, cursor)
VALUES (%(token_id)s, %(namespace)s, %(cursor)s)
ON CONFLICT (token_id, namespace)
DO UPDATE SET cursor = EXCLUDED.cursor, marked_at = now();

-- name: embedding_backlog
-- This namespace's jobs only (another tenant's backlog is not the caller's business).
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'dead')::int AS dead,
       COALESCE(extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'pending')),
                0)::float8 AS oldest_pending_seconds
  FROM embedding_jobs
 WHERE namespace = %(namespace)s;

-- name: overview_changes
-- A token's first bootstrap: the changes of each kind the feed keeps below %(horizon)s, the
-- position its cursor starts from (read by `changes.head` just before, in the same
-- transaction: every transaction below it has ended, so this statement sees all of them).
SELECT what, count(*)::int AS n
  FROM change_feed
 WHERE namespace = %(namespace)s AND xid < %(horizon)s::xid8
 GROUP BY what
 ORDER BY what;

-- name: overview_newest_changes
SELECT *
  FROM change_feed
 WHERE namespace = %(namespace)s AND xid < %(horizon)s::xid8
 ORDER BY xid DESC, id DESC
 LIMIT %(limit)s;

-- name: overview_memories
-- Live memories by kind, as memory_list shows them by default (quarantined ones left out).
SELECT kind, count(*)::int AS n
  FROM live_memories
 WHERE namespace = %(namespace)s AND NOT quarantined
 GROUP BY kind
 ORDER BY kind;
