-- 0043: the embedding queue is served round-robin across namespaces.
--
-- The worker's claim (storage/postgres/sql/embeddings.sql, `claim`) walks the namespaces that
-- have due jobs (one index probe each, skipping from one namespace to the next) and takes their
-- oldest jobs in turns, one per namespace per turn, starting after the namespace it served
-- last: a 50,000-memory import in one namespace no longer holds another's single write behind
-- it (docs/retrieval.md, Embedding queue). This index serves both the walk and each
-- namespace's oldest-first read.
CREATE INDEX embedding_jobs_fair ON embedding_jobs (namespace, run_after, id)
    WHERE status = 'pending';
