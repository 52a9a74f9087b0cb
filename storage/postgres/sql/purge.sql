-- Purge (migration 0023): each block calls one SECURITY DEFINER function, which answers NULL
-- when there is nothing to purge. Run on the owner's connection (storage/postgres/operator/purge.py),
-- except `purged_at`, which the app reads.

-- name: scope_all
SELECT set_config('memhub.namespaces', '*', true);

-- name: memory
SELECT memhub_purge_memory(%(target)s::uuid, %(reason)s, %(actor)s, %(source)s) AS answer;

-- name: handoff
SELECT memhub_purge_handoff(%(target)s::uuid, %(reason)s, %(actor)s, %(source)s) AS answer;

-- name: session
SELECT memhub_purge_session(%(target)s::uuid, %(reason)s, %(actor)s, %(source)s) AS answer;

-- name: artifact
SELECT memhub_purge_artifact(decode(%(target)s, 'hex'), %(namespace)s::text, %(reason)s,
                             %(actor)s, %(source)s) AS answer;

-- name: namespace
SELECT memhub_purge_namespace(%(target)s, %(reason)s, %(actor)s, %(source)s) AS answer;

-- name: last_tombstone
-- Why a purge found nothing: was it purged before?
SELECT purged_at FROM purge_tombstones
 WHERE kind = %(kind)s AND target = %(target)s
   AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s::text)
 ORDER BY purged_at DESC
 LIMIT 1;

-- name: can_clear_statistics
SELECT to_regprocedure('pg_clear_attribute_stats(text, text, text, boolean)') IS NOT NULL AS ok;

-- name: clear_statistics
-- An emptied table's column statistics (ANALYZE finds no rows and leaves them as they were).
SELECT pg_clear_attribute_stats(schemaname::text, tablename::text, attname::text, inherited)
  FROM pg_stats
 WHERE schemaname = 'public' AND tablename = %(table)s;

-- name: not_owned
-- Tables this role may not vacuum (VACUUM would only warn and skip them).
SELECT relname FROM pg_class
 WHERE relnamespace = 'public'::regnamespace AND relname = ANY (%(tables)s::text[])
   AND NOT pg_has_role(current_user, relowner, 'USAGE');

-- name: purged_at
-- A memory read by id that is not there: purged, and when (row-level security keeps this to
-- the caller's namespaces like any other read).
SELECT purged_at FROM purge_tombstones
 WHERE namespace = %(namespace)s AND kind = 'memory' AND target = %(id)s::text
 ORDER BY purged_at DESC
 LIMIT 1;
