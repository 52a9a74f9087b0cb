-- Garbage collection (migration 0024, storage/postgres/operator/gc.py).

-- name: run
SELECT memhub_gc(%(dry_run)s,
                 make_interval(secs => %(idempotency_ttl)s::float8),
                 make_interval(secs => %(dead_job_ttl)s::float8),
                 make_interval(secs => %(grace)s::float8),
                 make_interval(secs => %(login_forgive)s::float8),
                 %(batch)s, %(trigger)s,
                 make_interval(secs => %(min_gap)s::float8),
                 make_interval(days => %(change_feed_retention_days)s::int)) AS report;

-- name: spent
-- Right after `run`, in its transaction (migration 0034).
SELECT memhub_gc_spent(%(dry_run)s, %(batch)s,
                       make_interval(secs => %(delivery_keep)s::float8),
                       make_interval(secs => %(nonce_keep)s::float8)) AS report;

-- name: last_run
SELECT finished_at, trigger, removed, more
  FROM gc_runs
 ORDER BY finished_at DESC, id DESC
 LIMIT 1;

-- name: activity
-- Right after `run`, in its transaction (migration 0047).
SELECT memhub_gc_activity(%(dry_run)s, %(batch)s,
                          make_interval(days => %(retention_days)s::int)) AS report;
