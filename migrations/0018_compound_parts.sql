-- A part of a path, a dotted name, a host or an e-mail address finds the memory that holds it.
--
-- PostgreSQL's parser keeps such a token whole: "storage/postgres/search.py" is one `file` lexeme,
-- "Node.js" and "psycopg.pool.AsyncConnectionPool" one `host` lexeme each, and
-- "oncall@paystream.io" one `email` lexeme. So a query for "pg_search.py", "node",
-- "psycopg.pool", "config.toml" or "paystream.io" matched nothing lexically, though a developer
-- names a file, a module or a domain by its part far more often than by its whole spelling.
--
-- Each indexed text (title, content, tags, lineage) is now indexed together with its compound
-- tokens' parts (memhub_with_parts): their words, every tail of a path ("pg_search.py",
-- "storage/postgres/search.py"), every run of two or more labels of a dotted name ("psycopg.pool",
-- "paystream.io"), an address's local part and domain. The parts are cut by the same parser,
-- so a query word spelled as a part parses to the same lexemes (a phrase when it has several,
-- as "pg_search.py" -> 'pg' <-> 'search.py', whose lexemes the parts hold side by side). The
-- whole token is still indexed as before; the query side (memhub_query_terms) is unchanged.
-- Parts are bounded: a path's tails only up to 16 segments, a dotted name's runs only up to 6
-- labels, words of at least two characters.
--
-- Both stored tsvectors are dropped and added again with the parts (as 0017), which rewrites
-- the table, drops the namespaced-lexeme index and needs the stage-0 view recreated; every
-- namespace's word statistics are recounted (new lexemes, new lengths).
-- memhub: vacuum memories

-- The default text-search parser: its oid is fixed in the catalog (pg_ts_parser.dat), and the
-- immutable form of ts_parse takes the oid. Checked, so a catalog that differs fails here.
DO $$
BEGIN
    IF (SELECT prsname FROM pg_ts_parser WHERE oid = 3722) IS DISTINCT FROM 'default' THEN
        RAISE EXCEPTION 'text-search parser 3722 is not "default"';
    END IF;
END
$$;

-- What each indexed text of a memory is indexed from: the text, then its compound tokens'
-- parts. Most texts hold no compound token: a pattern test (~3 us) spares them the parser's
-- pass (~35 us, and sixteen calls per write), since every such token has a '.', '/' or '@'
-- before a word character. Self-contained, calling only pg_catalog functions: a generated
-- column's functions run under the caller's search_path, and pg_restore recomputes generated
-- columns with an empty one, so a call to another memhub function by name would fail there
-- (0011 keeps memhub_ns_lexemes free of memhub_ns_key for the same reason). plpgsql, not SQL:
-- a SQL body holding the parts' subquery cannot be inlined, and its per-call overhead cost
-- 1.8x the time of this form over SciFact's 5,183 abstracts.
CREATE FUNCTION memhub_with_parts(doc text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    parts text;
BEGIN
    IF doc IS NULL OR doc !~ '[./@]\w' THEN
        RETURN coalesce(doc, '');
    END IF;
    SELECT coalesce(string_agg(p.part, ' '), '') INTO parts
      FROM (
        -- Token types of the default parser: 4 email, 6 host, 18 url_path, 19 file. Each
        -- distinct token once (the whole token keeps its count in the text itself), at
        -- most 1,000 of them per text.
        SELECT DISTINCT tokid, token
          FROM ts_parse(3722, doc)
         WHERE tokid IN (4, 6, 18, 19)
         LIMIT 1000
      ) t
     CROSS JOIN LATERAL (
        -- its words
        SELECT w FROM regexp_split_to_table(t.token, '[/.@:?=&#]+') AS w
         WHERE length(w) >= 2
        UNION ALL
        -- a path: every tail, down to its last segment (the file's name)
        SELECT array_to_string(s.segs[i:cardinality(s.segs)], '/')
          FROM (SELECT array_remove(string_to_array(split_part(t.token, '?', 1), '/'), '')
                       AS segs) s,
               generate_series(2, cardinality(s.segs)) AS i
         WHERE t.tokid IN (18, 19) AND cardinality(s.segs) <= 16
        UNION ALL
        -- a dotted name or host: every run of two or more labels short of the whole (a
        -- port is not a label)
        SELECT array_to_string(s.segs[i:i + len - 1], '.')
          FROM (SELECT string_to_array(split_part(t.token, ':', 1), '.') AS segs) s,
               generate_series(2, cardinality(s.segs) - 1) AS len,
               generate_series(1, cardinality(s.segs) - len + 1) AS i
         WHERE t.tokid = 6 AND cardinality(s.segs) BETWEEN 3 AND 6
        UNION ALL
        -- an address: its local part and its domain
        SELECT a FROM unnest(string_to_array(t.token, '@')) AS a WHERE t.tokid = 4
      ) p(part);
    RETURN doc || E'\n' || parts;
END
$$;

DROP VIEW live_memories;
ALTER TABLE memories DROP COLUMN search_ns_tsv;
ALTER TABLE memories DROP COLUMN search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', memhub_with_parts(title)), 'A')
    || setweight(to_tsvector('simple', memhub_with_parts(title)), 'A')
    || setweight(to_tsvector('english', memhub_with_parts(content)), 'B')
    || setweight(to_tsvector('simple', memhub_with_parts(content)), 'B')
    || setweight(to_tsvector('english', memhub_with_parts(memhub_tags_text(tags))), 'C')
    || setweight(to_tsvector('simple', memhub_with_parts(memhub_tags_text(tags))), 'C')
    || setweight(to_tsvector('english', memhub_with_parts(lineage)), 'D')
    || setweight(to_tsvector('simple', memhub_with_parts(lineage)), 'D')
) STORED;
ALTER TABLE memories ADD COLUMN search_ns_tsv tsvector GENERATED ALWAYS AS (
    memhub_ns_lexemes(namespace,
        to_tsvector('english', memhub_with_parts(title))
        || to_tsvector('simple', memhub_with_parts(title))
        || to_tsvector('english', memhub_with_parts(content))
        || to_tsvector('simple', memhub_with_parts(content))
        || to_tsvector('english', memhub_with_parts(memhub_tags_text(tags)))
        || to_tsvector('simple', memhub_with_parts(memhub_tags_text(tags)))
        || to_tsvector('english', memhub_with_parts(lineage))
        || to_tsvector('simple', memhub_with_parts(lineage)))
) STORED;
CREATE INDEX memories_ns_lexemes ON memories USING gin (search_ns_tsv) WITH (fastupdate = off);
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;

-- The planner's estimates for @@ come from the columns' statistics, gone with the old columns.
ANALYZE memories;

-- Recount every namespace's word statistics soon (storage/postgres/lexicon.py), as 0010 does; the old
-- counts serve until then. Under forced row-level security the migrating role sees the rows
-- only with an all-namespace scope.
SELECT set_config('memhub.namespaces', '*', true);
UPDATE lexicon_state SET max_seq = 0;
