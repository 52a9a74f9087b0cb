-- name: memory_counts
-- Every namespace in scope (a token for all namespaces): the whole table.
SELECT namespace, status, count(*)::int AS n
  FROM memories
 GROUP BY namespace, status
 ORDER BY namespace, status;

-- name: memory_counts_in
-- A token's own namespaces, read through the (namespace, status, seq) index. Row-level security
-- alone would keep the answer right but not the work: the policy's test is not an index
-- condition, so every namespace's rows were read and dropped (43 ms for 1,000 memories beside
-- 143,000; 0.7 ms now).
SELECT namespace, status, count(*)::int AS n
  FROM memories
 WHERE namespace = ANY (%(namespaces)s::text[])
 GROUP BY namespace, status
 ORDER BY namespace, status;

-- name: embedding_queue
-- Every namespace's jobs (a token for all namespaces).
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'dead')::int AS dead
  FROM embedding_jobs;

-- name: embedding_queue_in
-- A token's own namespaces' jobs only: the depth of the whole queue moves with every other
-- tenant's writes. Row-level security confines it too; the condition says so where it is read.
SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
       count(*) FILTER (WHERE status = 'dead')::int AS dead
  FROM embedding_jobs
 WHERE namespace = ANY (%(namespaces)s::text[]);

-- name: quotas
-- The quotas of the namespaces in scope (migration 0042), with their use as the counters keep it.
SELECT namespace, max_memories, max_bytes, used_memories, used_bytes
  FROM namespace_quotas
 WHERE %(namespaces)s::text[] IS NULL OR namespace = ANY (%(namespaces)s::text[])
 ORDER BY namespace;
