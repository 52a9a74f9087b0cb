-- Tag filters read the tagged memories through an index (memory_list(tag=...),
-- memory_search(tags=[...])).
--
-- The tags' GIN index (0002) never served them: under row-level security PostgreSQL uses a
-- query's condition as an index condition only if its function is LEAKPROOF, and `tags @> ...`
-- (arraycontains) is not. Marking it LEAKPROOF (as 0006 does for `tsvector @@ tsquery`) would
-- widen that property for every array type in the database. So a filter walked the whole
-- namespace and tested each row: a tag no memory carries cost 110-140 ms at 100k memories, and
-- the semantic leg under a tag held by 2% of them walked the HNSW graph for 1.7 s hunting
-- tagged rows (docs/performance.md).
--
-- Now each memory's tags are also stored as a tsvector of exact lexemes, one per tag, each
-- prefixed by its namespace's key (as 0011 does for words: the namespace's own postings), and a
-- filter is `tag_ns_tsv @@ memhub_tag_gate(namespace, tags)`: the AND of those lexemes, served
-- by this column's GIN index under row-level security (ts_match_vq is LEAKPROOF since 0006;
-- without it the same rows are found by a filter). array_to_tsvector keeps each string as
-- written (no parsing, no case folding), so the match is the tags' exact equality, as `@>` was.
-- The planner's statistics on the column give each tag's own frequency, so a rare tag is read
-- from the index and a common one by walking the namespace newest first.
--
-- The key is written out (not memhub_ns_key) for the reason 0011 gives: the column is computed
-- with search_path = pg_catalog when the table is rewritten; the gate does the same so the two
-- cannot drift apart. A tag longer than 2,000 bytes (the API allows 64 characters) is left out
-- of the column rather than fail the write.
CREATE FUNCTION memhub_ns_tags(ns text, tags text[]) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_to_tsvector(coalesce(array_agg(k.key || t.tag), '{}'))
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tags) AS t(tag)
     WHERE t.tag IS NOT NULL AND t.tag <> '' AND octet_length(t.tag) <= 2000
$$;

-- The query side: every tag asked for, as a quoted tsquery lexeme (a quote doubled, a
-- backslash escaped, so no tag is read as tsquery syntax). NULL for no tags: the caller then
-- has no tag filter.
CREATE FUNCTION memhub_tag_gate(ns text, tags text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg('''' || replace(replace(k.key || t.tag, '\', '\\'), '''', '''''')
                      || '''', ' & ')::tsquery
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tags) AS t(tag)
     WHERE t.tag IS NOT NULL AND t.tag <> ''
$$;

DROP VIEW live_memories;
ALTER TABLE memories ADD COLUMN tag_ns_tsv tsvector GENERATED ALWAYS AS (
    memhub_ns_tags(namespace, tags)
) STORED;
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;

CREATE INDEX memories_ns_tags ON memories USING gin (tag_ns_tsv) WITH (fastupdate = off);
-- Could not serve a filter under row-level security (above); it only cost writes.
DROP INDEX memories_tags;

-- The planner's estimates for @@ on the new column come from its statistics.
ANALYZE memories;

-- The rewrite emptied the visibility map: vacuumed once this has committed (storage/postgres/migrate.py).
-- memhub: vacuum memories
