-- memory_context without a query serves the namespace's live memories newest first
-- (storage/sql/search.sql, context_recent: ORDER BY updated_at DESC, seq DESC). No index had
-- that order, so every such call read and sorted the whole namespace: 177 ms at 100k
-- memories, with both cores. This one holds exactly the ACTIVE rows in that order, so the
-- call reads the 300 it ranks (0.7 ms).
CREATE INDEX memories_live_recent ON memories (namespace, updated_at DESC, seq DESC)
    WHERE status = 'ACTIVE';
