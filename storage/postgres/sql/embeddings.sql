-- The embedding queue (embedding_jobs) and the vectors (memory_embeddings). The worker runs
-- with scope '*': jobs span namespaces, and RLS still applies to every row it touches.

-- name: claim
-- Due jobs, locked for this transaction; another worker skips them instead of waiting.
-- Fair across namespaces (0043): the namespaces with due jobs are walked one index probe each
-- (`spaces`), each offers its oldest due jobs, and the batch takes them in turns: every
-- namespace's oldest first, then every namespace's second, ..., the namespaces of a turn in
-- order starting after %(after)s (the last one the previous batch served, '' at first), so a
-- namespace with a backlog of any size takes at most its share of a batch and every other
-- namespace with a due job is in the next one. Each job comes with its memory's current
-- state, so a job that is no longer worth running (memory retired, or a newer revision
-- exists) can be dropped without calling the model; `turn` and `wrapped` let the worker name
-- the last namespace served.
WITH RECURSIVE spaces AS (
    (SELECT namespace
       FROM embedding_jobs
      WHERE status = 'pending' AND run_after <= now()
      ORDER BY namespace
      LIMIT 1)
    UNION ALL
    SELECT (SELECT j.namespace
              FROM embedding_jobs j
             WHERE j.status = 'pending' AND j.run_after <= now() AND j.namespace > s.namespace
             ORDER BY j.namespace
             LIMIT 1)
      FROM spaces s
     WHERE s.namespace IS NOT NULL
), offered AS (
    SELECT o.id, o.turn, s.namespace <= %(after)s AS wrapped, s.namespace
      FROM spaces s
     CROSS JOIN LATERAL (
        SELECT j.id, row_number() OVER (ORDER BY j.run_after, j.id) AS turn
          FROM embedding_jobs j
         WHERE j.namespace = s.namespace AND j.status = 'pending' AND j.run_after <= now()
         ORDER BY j.run_after, j.id
         LIMIT %(batch)s) o
     WHERE s.namespace IS NOT NULL
), chosen AS (
    SELECT id, turn, wrapped, namespace
      FROM offered
     ORDER BY turn, wrapped, namespace
     LIMIT %(batch)s
), due AS (
    SELECT j.id, c.turn, c.wrapped
      FROM embedding_jobs j
      JOIN chosen c USING (id)
     WHERE j.status = 'pending'
       FOR UPDATE OF j SKIP LOCKED
)
SELECT j.id, j.namespace, j.memory_id, j.revision, j.attempts, due.turn, due.wrapped,
       extract(epoch FROM now() - j.created_at)::float8 AS waited,
       m.status AS memory_status, m.current_revision, m.title, m.content, m.questions,
       e.revision AS embedded_revision, e.model AS embedded_model
  FROM embedding_jobs j
  JOIN due USING (id)
  JOIN memories m ON m.id = j.memory_id
  LEFT JOIN memory_embeddings e ON e.memory_id = j.memory_id
 ORDER BY due.turn, due.wrapped, j.namespace;

-- name: upsert_vector
-- Never let an older revision's vector replace a newer one.
INSERT INTO memory_embeddings (memory_id, namespace, revision, model, embedding)
VALUES (%(memory_id)s, %(namespace)s, %(revision)s, %(model)s, %(embedding)s)
ON CONFLICT (memory_id) DO UPDATE
   SET revision = EXCLUDED.revision,
       model = EXCLUDED.model,
       embedding = EXCLUDED.embedding,
       created_at = now()
 WHERE memory_embeddings.revision <= EXCLUDED.revision;

-- name: upsert_question_vector
-- One question's vector (migration 0040), never replacing a newer revision's; a question the
-- revision no longer has keeps an older revision's row, which no search compares.
INSERT INTO memory_question_embeddings (memory_id, namespace, revision, ordinal, model, embedding)
VALUES (%(memory_id)s, %(namespace)s, %(revision)s, %(ordinal)s, %(model)s, %(embedding)s)
ON CONFLICT (memory_id, ordinal) DO UPDATE
   SET revision = EXCLUDED.revision,
       model = EXCLUDED.model,
       embedding = EXCLUDED.embedding,
       created_at = now()
 WHERE memory_question_embeddings.revision <= EXCLUDED.revision;

-- name: delete_jobs
DELETE FROM embedding_jobs WHERE id = ANY (%(ids)s::bigint[]);

-- name: fail_job
-- Exponential backoff (2^attempts seconds, capped at an hour); dead after max_attempts.
UPDATE embedding_jobs
   SET attempts = attempts + 1,
       last_error = left(%(error)s, 1000),
       status = CASE WHEN attempts + 1 >= %(max_attempts)s THEN 'dead' ELSE 'pending' END,
       run_after = now() + least(power(2, attempts + 1), 3600) * interval '1 second'
 WHERE id = %(id)s
RETURNING status, attempts;

-- name: enqueue_missing
-- Live memories without a vector of their current revision under the configured model (new
-- model, lost job, restored backup), that have no job already: queue one each.
INSERT INTO embedding_jobs (namespace, memory_id, revision)
SELECT m.namespace, m.id, m.current_revision
  FROM memories m
  LEFT JOIN memory_embeddings e ON e.memory_id = m.id
 WHERE m.status = 'ACTIVE'
   AND (e.memory_id IS NULL OR e.model <> %(model)s OR e.revision < m.current_revision)
   AND NOT EXISTS (SELECT 1 FROM embedding_jobs j WHERE j.memory_id = m.id)
RETURNING id;

-- name: requeue_dead
-- Operator action (backfill --retry-dead): give dead jobs a fresh set of attempts.
UPDATE embedding_jobs
   SET status = 'pending', attempts = 0, run_after = now(), last_error = NULL
 WHERE status = 'dead'
RETURNING id;

-- name: queue_counts
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'pending' AND run_after <= now())::int AS due,
       count(*) FILTER (WHERE status = 'dead')::int AS dead
  FROM embedding_jobs;

-- name: queue_gauges
-- For /metrics, at a scrape: read through embedding_jobs_due (run_after, id) WHERE pending,
-- and each count stops at %(cap)s, so a backlog of millions costs what the cap costs. The age
-- is how long the oldest due job has waited since it became due (its enqueue, or its backoff
-- running out): how far behind the worker is.
SELECT (SELECT count(*) FROM (SELECT 1 FROM embedding_jobs
                               WHERE status = 'pending' LIMIT %(cap)s) p)::int AS pending,
       (SELECT count(*) FROM (SELECT 1 FROM embedding_jobs
                               WHERE status = 'pending' AND run_after <= now()
                               LIMIT %(cap)s) d)::int AS due,
       coalesce(extract(epoch FROM now() - (SELECT min(run_after) FROM embedding_jobs
                                             WHERE status = 'pending' AND run_after <= now())),
                0)::float8 AS oldest_due_seconds;
