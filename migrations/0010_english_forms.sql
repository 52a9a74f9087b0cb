-- A query word is looked up by its English forms only (docs/performance.md, storage/postgres/lexical_leg.py).
--
-- A word as the OR of its spellings under both configurations, e.g.
-- 'tenant' | 'tenants' for "tenants": the English stem and the word as written. The GIN index
-- reads the postings of every lexeme of a query, so each common word cost two posting lists,
-- though a memory holding the written form always holds the stem too: every part of the stored
-- tsvector (0002) is indexed under both configurations, the same parser cuts the same tokens for
-- both, and the stemmer maps the same token to the same stem. At 100k memories, where each
-- benchmark word is in 4,000-20,000 of them, the coverage gates took half the time without
-- the written forms, with identical results.
--
-- Every part but the tags: those were indexed as written only, so a memory tagged "payments"
-- and not mentioning payments held 'payments' and not 'payment'. The tags now get their
-- English stems too, which makes "holds the written form => holds the English form" true of the
-- whole tsvector, and the English forms alone find exactly the memories both found (checked by
-- tests/integration/test_lexical_index.py over every part of a memory).
--
-- A word whose English form is empty (a stopword variant such as the "I" of "I'll") keeps its
-- written form, which is then the only one a memory can hold.

-- 1. The stored tsvector: the tags' English stems (weight C, as the tags' words). Dropped and
-- added again (SET EXPRESSION needs PostgreSQL 17), which rewrites the table and drops what
-- depends on the column: the stage-0 view and the GIN index, recreated as 0002 and 0006 made
-- them.
DROP VIEW live_memories;
ALTER TABLE memories DROP COLUMN search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '')), 'A')
    || setweight(to_tsvector('simple', coalesce(title, '')), 'A')
    || setweight(to_tsvector('english', content), 'B')
    || setweight(to_tsvector('simple', content), 'B')
    || setweight(to_tsvector('english', memhub_tags_text(tags)), 'C')
    || setweight(to_tsvector('simple', memhub_tags_text(tags)), 'C')
) STORED;
CREATE INDEX memories_namespace_tsv ON memories USING gin (namespace, search_tsv)
    WITH (fastupdate = off);
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;
-- The planner's estimates for @@ come from the column's statistics, gone with the old column.
ANALYZE memories;

-- Recount every namespace's word statistics soon (storage/postgres/lexicon.py: a namespace whose newest
-- counted memory is older than its memories is due); the old counts serve until then. Under
-- forced row-level security the migrating role sees the rows only with an all-namespace scope.
SELECT set_config('memhub.namespaces', '*', true);
UPDATE lexicon_state SET max_seq = 0;

-- 2. The query side: same words, same order, same variants as 0003's version; each variant by
-- its English form, or as written when that is empty.
CREATE OR REPLACE FUNCTION memhub_query_terms(q text) RETURNS tsquery[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(t ORDER BY first_ord), '{}')
      FROM (
        SELECT min(ord) AS first_ord, t
          FROM (
            SELECT s.ord,
                   (SELECT memhub_tsquery_or(CASE WHEN numnode(e.q) > 0 THEN e.q
                                                  ELSE phraseto_tsquery('simple', v) END)
                      FROM unnest(memhub_word_variants(s.w)) AS v,
                           LATERAL (SELECT phraseto_tsquery('english', v) AS q) e) AS t
              FROM regexp_split_to_table(left(q, 1000), '\s+') WITH ORDINALITY AS s(w, ord)
             WHERE numnode(phraseto_tsquery('english', s.w)) > 0
               AND s.ord <= 64
          ) per_word
         WHERE numnode(t) > 0
         GROUP BY t
      ) uniq
$$;
