-- Retrieval. Every leg selects FROM live_memories (stage 0: namespace by RLS, ACTIVE, not
-- expired) and excludes quarantined rows BEFORE any ranking: a retired memory is never a
-- candidate, so no score can bring it back.

-- Every search transaction also sets, with its scope, the planner and HNSW settings listed
-- in SearchStore._search_gucs (storage/pg_search.py).

-- name: lexical_terms
-- The lexical leg (storage/lexical_leg.py) starts here: the query's meaningful words
-- (memhub_query_terms, 0003), how many a memory must match, and the words' OR for ranking. The
-- index gates are built from the words and sent back as values, so the planner sees the real
-- tsqueries (and their lexeme statistics) when it plans each level.
SELECT t AS terms, need, (SELECT memhub_tsquery_or(x) FROM unnest(t) AS x) AS any_term
  FROM (SELECT t, greatest(1, ceil(cardinality(t) * %(min_coverage)s::float8))::int AS need
          FROM memhub_query_terms(%(query)s) AS t) words;

-- name: lexical
-- The candidates (memhub_lexical_candidates, 0006: coverage levels read strictest first)
-- re-read through stage 0, ranked by words matched, then ts_rank_cd over their OR. ts_rank
-- (cheaper) keeps the best `rerank` first: only they pay for ts_rank_cd's cover-density pass.
SELECT id, matched, rank
  FROM (
    SELECT r.id, r.seq, r.matched,
           ts_rank_cd(r.search_tsv, %(any_term)s::tsquery)::float8 AS rank
      FROM (
        SELECT m.id, m.seq, m.search_tsv, c.matched
          FROM (SELECT f.id, max(f.matched) AS matched
                  FROM memhub_lexical_candidates(
                           %(namespace)s, %(terms)s::tsquery[], %(gates)s::tsquery[],
                           %(floors)s::int[], %(take)s, %(depth)s, %(kinds)s::text[],
                           %(tags)s::text[]) AS f
                 GROUP BY f.id) c
          JOIN live_memories m ON m.id = c.id
         WHERE m.namespace = %(namespace)s
           AND NOT m.quarantined
         ORDER BY c.matched DESC, ts_rank(m.search_tsv, %(any_term)s::tsquery) DESC, m.seq DESC
         LIMIT %(rerank)s
      ) r
  ) scored
 ORDER BY matched DESC, rank DESC, seq DESC
 LIMIT %(depth)s;

-- name: semantic
-- Nearest first among live memories whose vector is of their current revision and of the
-- configured model; the distance gate is applied outside the LIMIT so the HNSW scan is never
-- asked to find rows that do not exist (which would make it walk the whole graph).
SELECT id, distance
  FROM (
    SELECT m.id, (e.embedding <=> %(embedding)s)::float8 AS distance
      FROM memory_embeddings e
      JOIN live_memories m ON m.id = e.memory_id AND m.current_revision = e.revision
     WHERE e.namespace = %(namespace)s
       AND m.namespace = %(namespace)s
       AND e.model = %(model)s
       AND NOT m.quarantined
       AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s::text[]))
       AND (%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])
     ORDER BY e.embedding <=> %(embedding)s
     LIMIT %(depth)s
  ) nearest
 WHERE distance <= %(max_distance)s
 ORDER BY distance, id;

-- name: fetch_live
-- The final rows, re-read through stage 0 (a memory retired since the legs ran drops out).
SELECT m.*
  FROM live_memories m
 WHERE m.id = ANY (%(ids)s::uuid[])
   AND m.namespace = %(namespace)s
   AND NOT m.quarantined;

-- name: context_recent
-- memory_context without a query: the live memories of the namespace, newest first.
SELECT m.*
  FROM live_memories m
 WHERE m.namespace = %(namespace)s
   AND NOT m.quarantined
   AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s::text[]))
 ORDER BY m.updated_at DESC, m.seq DESC
 LIMIT %(depth)s;

-- name: vectors_for
-- Current vectors of the configured model, for MMR's similarity.
SELECT e.memory_id AS id, e.embedding
  FROM memory_embeddings e
  JOIN live_memories m ON m.id = e.memory_id AND m.current_revision = e.revision
 WHERE e.memory_id = ANY (%(ids)s::uuid[])
   AND e.namespace = %(namespace)s
   AND e.model = %(model)s;
