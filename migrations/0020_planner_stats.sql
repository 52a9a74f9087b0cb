-- Planner statistics follow each namespace's growth (storage/postgres/planner_stats.py).
--
-- Every statement filters by namespace, and PostgreSQL estimates how many rows a namespace
-- holds from the statistics of its last ANALYZE. A namespace written since then (a new
-- project, an import) is estimated at one row, and for one row a nested loop that rescans the
-- namespace for each outer row costs the same as a lookup by id, so the planner may take it:
-- memory_context without a query, for 3,000 memories of a namespace created after the last
-- ANALYZE, read 855,000 embedding rows (644 ms) where 300 lookups do (55 ms after ANALYZE).
-- Autovacuum analyzes a table only once a tenth of it has changed, so beside 100,000 memories
-- a new namespace can reach 10,000 unnoticed. memhub analyzes the namespace column itself
-- whenever a namespace's memories or vectors have doubled since the last time it did.
ALTER TABLE lexicon_state
    ADD COLUMN analyzed_docs    integer,  -- docs at memhub's last ANALYZE (NULL: never)
    ADD COLUMN analyzed_vectors integer;  -- its vectors (docs less pending embedding jobs) then

-- The app role may not ANALYZE the owner's tables; this function (the owner's) does only that,
-- on fixed tables and columns, and takes no input. One session at a time: another memhub
-- process on the same database skips (false) rather than queueing a second ANALYZE.
CREATE FUNCTION memhub_analyze_namespaces()
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('memhub_analyze_namespaces')) THEN
        RETURN false;
    END IF;
    -- The namespace column only: the estimates that decide join shapes. The tsvector columns'
    -- statistics are costly to gather and are left to autovacuum.
    ANALYZE memories (namespace), memory_embeddings (namespace);
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION memhub_analyze_namespaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_analyze_namespaces() TO memhub_app;
