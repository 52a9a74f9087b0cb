-- Retrieval. Every leg selects FROM live_memories (stage 0: namespace by RLS, ACTIVE, not
-- expired) and excludes quarantined rows BEFORE any ranking: a retired memory is never a
-- candidate, so no score can bring it back.

-- name: set_semantic_scan
-- Per transaction: HNSW breadth, and iterative scans so filters applied after the index
-- (stage 0, kinds, tags, namespace) still yield enough rows (pgvector >= 0.8).
SELECT set_config('hnsw.ef_search', %(ef_search)s, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true);

-- name: lexical
-- A memory qualifies when it matches at least `min_coverage` of the query's meaningful words
-- (memhub_query_terms, 0003); ranked by how many words it matches, then ts_rank_cd over their OR.
WITH terms AS (
    SELECT t, cardinality(t) AS n FROM memhub_query_terms(%(query)s) AS t
), any_term AS (
    SELECT memhub_tsquery_or(x) AS q, min(n) AS n FROM terms, unnest(terms.t) AS x
)
SELECT id, matched, rank
  FROM (
    SELECT m.id, m.seq,
           (SELECT count(*) FROM terms, unnest(terms.t) AS x WHERE m.search_tsv @@ x)::int
               AS matched,
           ts_rank_cd(m.search_tsv, a.q)::float8 AS rank,
           a.n
      FROM live_memories m, any_term a
     WHERE m.namespace = %(namespace)s
       AND NOT m.quarantined
       AND m.search_tsv @@ a.q
       AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s::text[]))
       AND (%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])
  ) scored
 WHERE matched >= greatest(1, ceil(n * %(min_coverage)s::float8))
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
