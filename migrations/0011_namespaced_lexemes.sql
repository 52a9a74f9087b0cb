-- The lexical leg's index holds each word per namespace (storage/postgres/lexical_leg.py, docs/performance.md).
--
-- The (namespace, search_tsv) GIN index (0006) keeps the namespace as a key of its own: GIN
-- stores it beside the words as one more entry, whose posting list is every memory of the
-- namespace, and a gate "namespace AND these words" intersects that list with the words'. At
-- 100k memories in one namespace the namespace's list cost about as much as the words': "worker
-- & valid" took 1.2-2.0 ms through it and 0.6 ms through an index of the words alone, which
-- itself cannot tell namespaces apart (a small project would walk every project's postings).
--
-- Now each word is indexed as one entry per namespace: `search_ns_tsv` holds the memory's
-- lexemes, each prefixed by a short key of its namespace (memhub_ns_key: 8 hex digits of its
-- SHA-256 and a '/'), without positions or weights; the GIN index over it answers a gate from
-- the namespace's own postings only. The leg writes its gates in the same form
-- (storage/lexical_leg.index_form) and keeps testing the exact words on search_tsv for every
-- row the index returns, so the index only has to return a superset:
-- - a word written as a phrase (PAYSTREAM_WEBHOOK_SECRET, "write-ahead") is looked up as the
--   AND of its lexemes, or as its compound lexeme alone ('write-ahead' is indexed with its
--   parts); positions are not in this column, and any part of a phrase holds wherever it does;
-- - two namespaces whose keys collide (one chance in 4 billion per pair) share postings: slower
--   for them, never wrong, since every read also filters on the namespace (and RLS on it).
-- A stored column, not an index on the expression: building the prefixed vector costs ~40 us,
-- and a plan that tests rows one by one (a fresh table without statistics yet: an index walk
-- of the namespace with the gate as a filter) would build it for every row, ~10 ms at 1,000
-- memories; tested on a stored column, @@ costs what it did on search_tsv.
-- The key is short so the prefixed vector of the largest memory (100,000 characters: at most
-- ~50,000 distinct lexemes) stays under tsvector's 1 MB; a lexeme longer than 2,000 bytes (the
-- limit is 2,047; the parser drops longer words) is left out of this column rather than fail
-- the write. Query words come from at most 1,000 characters (memhub_query_terms).

CREATE FUNCTION memhub_ns_key(ns text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- sha256, not md5: md5 is refused on FIPS-mode servers. text -> bytea is a binary
    -- coercion (immutable, unlike convert_to); namespaces are ASCII by CHECK.
    SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/'
$$;

-- The key is written out again rather than called: PostgreSQL rewrites tables and builds
-- indexes with search_path = pg_catalog, where memhub_ns_key is not found
-- (tests/integration/test_lexical_index.py checks that both give the same key).
CREATE FUNCTION memhub_ns_lexemes(ns text, tsv tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_to_tsvector(coalesce(array_agg(k.key || l.lexeme), '{}'))
      FROM (SELECT left(encode(sha256(ns::bytea), 'hex'), 8) || '/' AS key) k,
           unnest(tsvector_to_array(tsv)) AS l(lexeme)
     WHERE octet_length(l.lexeme) <= 2000
$$;

-- The column: search_tsv's words (0010), as lexemes only. A generated column cannot read
-- another, so search_tsv's expression is repeated without its weights (this one has none);
-- test_the_namespaced_lexemes_are_search_tsv_s checks the two hold the same words. Added to
-- the table, which rewrites it and needs the stage-0 view recreated (as in 0010).
DROP VIEW live_memories;
ALTER TABLE memories ADD COLUMN search_ns_tsv tsvector GENERATED ALWAYS AS (
    memhub_ns_lexemes(namespace,
        to_tsvector('english', coalesce(title, '')) || to_tsvector('simple', coalesce(title, ''))
        || to_tsvector('english', content) || to_tsvector('simple', content)
        || to_tsvector('english', memhub_tags_text(tags))
        || to_tsvector('simple', memhub_tags_text(tags)))
) STORED;
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;

CREATE INDEX memories_ns_lexemes ON memories USING gin (search_ns_tsv) WITH (fastupdate = off);
DROP INDEX memories_namespace_tsv;

-- One gate's read (0009) through the new index; `matched` still counts the exact words.
CREATE OR REPLACE FUNCTION memhub_lexical_gate(
    p_namespace text, p_terms tsquery[], p_gate tsquery, p_floor int, p_seen uuid[],
    p_limit int, p_kinds text[], p_tags text[]
) RETURNS TABLE (id uuid, matched int)
LANGUAGE sql STABLE ROWS 100
AS $$
    SELECT h.id, h.matched
      FROM (
        SELECT m.id,
               (SELECT count(*) FROM unnest(p_terms) AS x WHERE m.search_tsv @@ x)::int
                   AS matched
          FROM live_memories m
         WHERE m.namespace = p_namespace
           AND NOT m.quarantined
           AND m.search_ns_tsv @@ p_gate
           AND m.id <> ALL (p_seen)
           AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
           AND (p_tags IS NULL OR m.tags @> p_tags)
        OFFSET 0  -- compute `matched` once per row, below the filter on it
      ) h
     WHERE h.matched >= p_floor
     LIMIT p_limit
$$;

-- The planner's estimates for @@ on the new column come from its statistics.
ANALYZE memories;
