-- Provenance checks, verifications, observations, re-verification and coord_health
-- (storage/postgres/memories/trust.py, health.py; migration 0029). Every statement names the namespace;
-- row-level security confines it too.

-- name: missing_sources
-- The derived_from entries that name nothing in this namespace (any status: a memory derived
-- from a retired one still came from it).
SELECT s.type, s.id
  FROM unnest(%(types)s::text[], %(ids)s::uuid[]) WITH ORDINALITY AS s(type, id, n)
 WHERE NOT CASE s.type
       WHEN 'memory' THEN EXISTS (SELECT 1 FROM memories x
                                   WHERE x.namespace = %(namespace)s AND x.id = s.id)
       WHEN 'session' THEN EXISTS (SELECT 1 FROM sessions x
                                    WHERE x.namespace = %(namespace)s AND x.id = s.id)
       WHEN 'handoff' THEN EXISTS (SELECT 1 FROM handoffs x
                                    WHERE x.namespace = %(namespace)s AND x.id = s.id)
       WHEN 'artifact' THEN EXISTS (SELECT 1 FROM artifacts x
                                     WHERE x.namespace = %(namespace)s AND x.id = s.id)
       ELSE false END
 ORDER BY s.n;

-- name: missing_memories
SELECT r.id
  FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS r(id, n)
 WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.namespace = %(namespace)s AND m.id = r.id)
 ORDER BY r.n;

-- name: lock_memory
-- The memory a verification is for, locked so a concurrent revision lands before or after it.
SELECT *, (status = 'ACTIVE' AND expires_at <= now()) IS TRUE AS past_expiry
  FROM memories
 WHERE namespace = %(namespace)s AND id = %(id)s
   FOR SHARE;

-- name: insert_verification
INSERT INTO memory_verifications (namespace, memory_id, revision, verified_by)
VALUES (%(namespace)s, %(memory_id)s, %(revision)s, %(verified_by)s)
RETURNING revision, verified_by, verified_at;

-- name: insert_observation
INSERT INTO memory_observations (namespace, kind, text, refs, author_client, quarantined,
                                 quarantine_reasons)
VALUES (%(namespace)s, %(kind)s, %(text)s, %(refs)s, %(author)s, %(quarantined)s,
        %(reasons)s)
RETURNING *;

-- name: observation_counts_of
-- How often clients reported this memory, and how many of those reports are still open (see
-- open_observations).
SELECT count(*)::int AS total,
       count(*) FILTER (WHERE m.updated_at <= o.created_at
                          AND NOT EXISTS (SELECT 1 FROM memory_verifications v
                                           WHERE v.memory_id = m.id
                                             AND v.verified_at > o.created_at))::int AS open
  FROM memory_observations o
  JOIN memories m ON m.namespace = o.namespace AND m.id = %(id)s
 WHERE o.namespace = %(namespace)s AND o.refs @> ARRAY[%(id)s::uuid];

-- name: reverification_due
-- ACTIVE, unexpired, unquarantined memories of the kinds the profile gives a period, whose last
-- verification or revision is older than it; oldest first, with how many there are in all.
WITH periods AS (
    SELECT d.key AS kind, d.value::int AS days
      FROM namespace_profiles p, jsonb_each_text(p.profile -> 'reverify_days') AS d
     WHERE p.namespace = %(namespace)s
), due AS (
    SELECT m.*, f.fresh_at, periods.days
      FROM periods
      JOIN live_memories m ON m.namespace = %(namespace)s AND m.kind = periods.kind
      CROSS JOIN LATERAL (SELECT memhub_fresh_at(m.namespace, m.id) AS fresh_at) f
     WHERE NOT m.quarantined
       AND f.fresh_at + make_interval(days => periods.days) <= now()
)
SELECT *, count(*) OVER ()::int AS total
  FROM due
 ORDER BY fresh_at, seq
 LIMIT %(limit)s;

-- name: open_observations
-- Reports not yet addressed: one is addressed once every memory it names was written again
-- (revised, superseded, forgotten: updated_at moves) or verified after it was logged. A report
-- naming no memory (something missing) stays open.
SELECT o.*, count(*) OVER ()::int AS total
  FROM memory_observations o
 WHERE o.namespace = %(namespace)s
   AND (cardinality(o.refs) = 0 OR EXISTS (
        SELECT 1 FROM memories m
         WHERE m.namespace = o.namespace AND m.id = ANY (o.refs)
           AND m.updated_at <= o.created_at
           AND NOT EXISTS (SELECT 1 FROM memory_verifications v
                            WHERE v.memory_id = m.id AND v.verified_at > o.created_at)))
 ORDER BY o.seq DESC
 LIMIT %(limit)s;

-- name: old_open_handoffs
SELECT id, title, for_surface, author_client, created_at, count(*) OVER ()::int AS total
  FROM handoffs
 WHERE namespace = %(namespace)s AND status = 'open'
   AND created_at <= now() - make_interval(hours => %(hours)s)
 ORDER BY seq
 LIMIT %(limit)s;

-- name: embedding_jobs
SELECT count(*) FILTER (WHERE status = 'dead')::int AS dead,
       count(*) FILTER (WHERE status = 'pending')::int AS pending
  FROM embedding_jobs
 WHERE namespace = %(namespace)s;

-- name: quarantined
-- Writes the screen held back: live memories, open handoffs, session events.
SELECT (SELECT count(*) FROM live_memories
         WHERE namespace = %(namespace)s AND quarantined)::int AS memories,
       (SELECT count(*) FROM handoffs
         WHERE namespace = %(namespace)s AND status = 'open' AND quarantined)::int AS handoffs,
       (SELECT count(*) FROM session_events
         WHERE namespace = %(namespace)s AND quarantined)::int AS session_events,
       (SELECT count(*) FROM memory_observations
         WHERE namespace = %(namespace)s AND quarantined)::int AS observations;

-- name: observation_totals
-- Per namespace in scope (stats, the dashboard): reports logged, and those still open.
SELECT o.namespace, count(*)::int AS total,
       count(*) FILTER (WHERE cardinality(o.refs) = 0 OR EXISTS (
           SELECT 1 FROM memories m
            WHERE m.namespace = o.namespace AND m.id = ANY (o.refs)
              AND m.updated_at <= o.created_at
              AND NOT EXISTS (SELECT 1 FROM memory_verifications v
                               WHERE v.memory_id = m.id AND v.verified_at > o.created_at)
       ))::int AS open
  FROM memory_observations o
 WHERE %(namespaces)s::text[] IS NULL OR o.namespace = ANY (%(namespaces)s::text[])
 GROUP BY o.namespace
 ORDER BY o.namespace;

-- name: synchronous_commit
-- Whether an acknowledged COMMIT is durable (storage/postgres/memories/trust.py, persisted()).
SELECT current_setting('synchronous_commit') AS setting;
