-- Retrieval. Every leg selects FROM live_memories (stage 0: namespace by RLS, ACTIVE, not
-- expired) and excludes quarantined rows BEFORE any ranking: a retired memory is never a
-- candidate, so no score can bring it back.

-- Every search transaction also sets, with its scope, the planner and HNSW settings listed
-- in SearchStore._search_gucs (storage/pg_search.py).

-- name: lexical_terms
-- First round trip of the lexical leg: the query's meaningful words (memhub_query_terms, 0003),
-- how many a memory must match, the index gates for that, best tier first
-- (memhub_coverage_tiers, 0006), and the words' OR for ranking. They travel back as values so
-- the planner sees the real tsqueries (and their lexeme statistics) when it plans the leg.
SELECT t AS terms, need, tiers.gates, tiers.below,
       (SELECT memhub_tsquery_or(x) FROM unnest(t) AS x) AS any_term
  FROM (SELECT t, greatest(1, ceil(cardinality(t) * %(min_coverage)s::float8))::int AS need
          FROM memhub_query_terms(%(query)s) AS t) words,
       memhub_coverage_tiers(t, need) AS tiers;

-- name: lexical
-- A memory qualifies when it matches at least `need` of the query's words; ranked by how many it
-- matches, then ts_rank_cd over their OR. Bounded work at any size: the tiers are read in order
-- (every word, then all but one, ...), each through the GIN index, until `candidates` rows are
-- in hand, so when more qualify, the ones left out match no more words than every one kept
-- (which of a tier's rows is the index's order: docs/perf.md). ts_rank (cheap) keeps the best
-- `rerank` of the candidates and only they pay for ts_rank_cd's cover-density pass.
SELECT id, matched, rank
  FROM (
    SELECT c.id, c.seq, c.matched,
           ts_rank_cd(c.search_tsv, %(any_term)s::tsquery)::float8 AS rank
      FROM (
        SELECT g.*
          FROM unnest(%(gates)s::tsquery[], %(below)s::int[]) AS tier(gate, below)
         CROSS JOIN LATERAL (
            SELECT h.*
              FROM (
                SELECT m.id, m.seq, m.search_tsv,
                       (SELECT count(*) FROM unnest(%(terms)s::tsquery[]) AS x
                         WHERE m.search_tsv @@ x)::int AS matched
                  FROM live_memories m
                 WHERE m.namespace = %(namespace)s
                   AND NOT m.quarantined
                   AND m.search_tsv @@ tier.gate
                   AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s::text[]))
                   AND (%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])
                 OFFSET 0  -- keep `matched` computed once per row, below the filter
              ) h
             WHERE h.matched >= %(need)s AND h.matched < tier.below
             LIMIT %(candidates)s
         ) g
         LIMIT %(candidates)s
      ) c
     ORDER BY c.matched DESC, ts_rank(c.search_tsv, %(any_term)s::tsquery) DESC, c.seq DESC
     LIMIT %(rerank)s
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
