-- The activity log (migration 0047, storage/postgres/operator/activity.py).

-- name: write
-- One batch. `at` is the database clock less the row's age in the process's buffer, so every
-- timestamp is the database's (docs/architecture.md, invariant 11).
INSERT INTO tool_events (namespace, tool, surface, token_id, outcome, error_code, duration_ms,
                         at)
SELECT e.namespace, e.tool, e.surface, e.token_id,
       CASE WHEN e.error_code IS NULL THEN 'ok' ELSE 'error' END, e.error_code, e.duration_ms,
       now() - make_interval(secs => e.age)
  FROM unnest(%(namespaces)s::text[], %(tools)s::text[], %(surfaces)s::text[],
              %(token_ids)s::bigint[], %(error_codes)s::text[], %(durations)s::real[],
              %(ages)s::float8[])
       AS e(namespace, tool, surface, token_id, error_code, duration_ms, age);

-- name: latest
SELECT at, tool, surface, token_id, outcome, error_code, duration_ms
  FROM tool_events
 WHERE namespace = %(namespace)s
 ORDER BY at DESC, id DESC
 LIMIT %(limit)s;
