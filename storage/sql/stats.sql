-- name: memory_counts
SELECT namespace, status, count(*)::int AS n
  FROM memories
 GROUP BY namespace, status
 ORDER BY namespace, status;

-- name: embedding_queue
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'dead')::int AS dead
  FROM embedding_jobs;
