-- Retrieval. Every leg selects FROM live_memories (stage 0: namespace by RLS, ACTIVE, not
-- expired) and excludes quarantined rows BEFORE any ranking: a retired memory is never a
-- candidate, so no score can bring it back.

-- Every search transaction also sets, with its scope, the planner and HNSW settings listed
-- in SearchStore._search_gucs (storage/postgres/retrieval/search.py).

-- name: lexical_terms
-- The lexical leg (storage/postgres/retrieval/lexical_leg.py) starts here: the query's meaningful words
-- (memhub_query_terms, 0003), how many a memory must hold (a share of them, at most
-- %(max_need)s), and what BM25 needs (search.lexical): every lexeme of every word with the
-- word's 1-based index, each word's document frequency and IDF from the namespace's
-- statistics (storage/postgres/retrieval/lexicon.py; a word not counted there is in one memory), and the average
-- memory length. No statistics yet: every frequency 1, every IDF 1, no length norm. `key`
-- prefixes the words of the index gates (migration 0011).
WITH words AS (
    SELECT t AS terms,
           least(%(max_need)s, greatest(1, ceil(cardinality(t) * %(min_coverage)s::float8)))::int
               AS need
      FROM memhub_query_terms(%(query)s) AS t
), state AS (
    SELECT docs, avg_length FROM lexicon_state WHERE namespace = %(namespace)s
), per_word AS (
    SELECT u.i::int AS i, memhub_tsquery_lexemes(u.t) AS lexemes
      FROM words, unnest(words.terms) WITH ORDINALITY AS u(t, i)
), weighted AS (
    SELECT p.i, p.lexemes, d.df,
           CASE WHEN s.docs IS NULL THEN 1.0::float8
                ELSE ln(1 + (s.docs - d.df + 0.5) / (d.df + 0.5)) END AS idf
      FROM per_word p
      LEFT JOIN state s ON true
      CROSS JOIN LATERAL (
        SELECT least(coalesce(max(lw.ndoc), 1), greatest(s.docs, 1))::float8 AS df
          FROM lexicon_words lw
         WHERE lw.namespace = %(namespace)s AND lw.lexeme = ANY (p.lexemes)) d
)
SELECT w.terms, w.need,
       (SELECT array_agg(l ORDER BY p.i, l) FROM weighted p, unnest(p.lexemes) AS l) AS lexemes,
       (SELECT array_agg(p.i ORDER BY p.i, l) FROM weighted p, unnest(p.lexemes) AS l)
           AS term_of,
       (SELECT array_agg(p.df ORDER BY p.i) FROM weighted p) AS df,
       (SELECT array_agg(p.idf ORDER BY p.i) FROM weighted p) AS idf,
       (SELECT avg_length FROM state) AS avg_length,
       memhub_ns_key(%(namespace)s) AS key
  FROM words w;

-- name: lexical
-- The candidates (storage/postgres/retrieval/lexical_leg.py), each read through the namespaced-lexeme GIN index
-- (0011) under stage 0: the memories holding any of the rarest words (%(rare)s, NULL when none
-- is rare enough; at most %(take)s), and those the coverage levels over the other words find
-- (memhub_lexical_candidates, 0006: strictest first, stopping at the leg's depth). Each is
-- scored by BM25 (below) and kept if it holds at least %(need)s of the words.
SELECT id, matched, rank, coverage
  FROM (
    -- Rounded (to 1e-9, in float: a numeric round cost ~1 us a candidate): memories that
    -- score alike (the same IDFs, frequencies and lengths, summed over different words in each
    -- row's order) differ in the last bits of a float sum, and the tie-breaker below (newest
    -- first) must decide between them, not those bits.
    SELECT j.id, j.seq, s.matched, round(s.score * 1e9::float8) / 1e9::float8 AS rank,
           s.covered / %(idf_total)s::float8 AS coverage
      FROM (
        (SELECT r.id, r.seq, r.search_tsv
           FROM live_memories r
          WHERE r.namespace = %(namespace)s
            AND NOT r.quarantined
            AND r.search_ns_tsv @@ %(rare_index)s::tsquery
            AND r.search_tsv @@ %(rare)s::tsquery  -- the index form is a superset (0011)
            AND (%(kinds)s::text[] IS NULL OR r.kind = ANY (%(kinds)s::text[]))
            AND (%(tags)s::text[] IS NULL
                 OR r.tag_ns_tsv @@ memhub_tag_gate(%(namespace)s, %(tags)s::text[]))
          LIMIT %(take)s)
        UNION ALL
        -- Each candidate read once: a memory holding a rare word came from the first branch.
        -- Looked up one by one (LIMIT 1 keeps the planner from turning this into a scan of
        -- the whole namespace joined by hash).
        SELECT m.id, m.seq, m.search_tsv
          FROM (SELECT DISTINCT f.id
                  FROM memhub_lexical_candidates(
                           %(namespace)s, %(common)s::tsquery[], %(gates)s::tsquery[],
                           %(floors)s::int[], %(take)s, %(depth)s, %(kinds)s::text[],
                           %(tags)s::text[]) AS f) f
         CROSS JOIN LATERAL (
            SELECT l.id, l.seq, l.search_tsv
              FROM live_memories l
             WHERE l.id = f.id
               AND l.namespace = %(namespace)s
               AND NOT l.quarantined
               AND (%(rare)s::tsquery IS NULL OR NOT l.search_tsv @@ %(rare)s::tsquery)
             LIMIT 1) m
      ) j
      CROSS JOIN LATERAL (
        -- BM25, k1 = 1.2, b = 0.75. A word's frequency in the memory is that of its most
        -- frequent lexeme (its stem or its literal spelling: the tsvector holds both), read
        -- after cutting the tsvector down to the query's lexemes in C (setweight marks them,
        -- ts_filter keeps them) so only those few are unnested. Without statistics yet
        -- (avg_length NULL) there is no length norm. Written inline, not as a function: a
        -- function call per candidate cost 3-4x the arithmetic.
        SELECT coalesce(sum((%(idf)s::float8[])[w.term] * w.tf * 2.2
                            / (w.tf + 1.2 * (0.25 + 0.75 * length(j.search_tsv)
                                             / greatest(coalesce(%(avg_length)s::float8,
                                                                 length(j.search_tsv)), 1)))),
                        0) AS score,
               count(*)::int AS matched,
               -- The share of the query's IDF its matched words carry: how much of what the
               -- query says the memory holds (storage/retrieval_guard.py).
               coalesce(sum((%(idf)s::float8[])[w.term]), 0) AS covered
          FROM (
            SELECT q.term, max(coalesce(cardinality(v.positions), 1)) AS tf
              FROM unnest(ts_filter(setweight(setweight(j.search_tsv, 'D'), 'A',
                                              %(lexemes)s::text[]), '{a}')) AS v
              JOIN unnest(%(lexemes)s::text[], %(term_of)s::int[]) AS q(lexeme, term)
                ON q.lexeme = v.lexeme
             GROUP BY q.term
          ) w
      ) s
  ) scored
 WHERE matched >= %(need)s
 ORDER BY rank DESC, seq DESC
 LIMIT %(depth)s;

-- name: semantic_plan
-- Run in the search transaction before the semantic statement (while the query is embedded).
-- The planner counts a namespace twice, once for the statement's own predicate and once for
-- the row-level-security policy, so it expects a namespace holding a fraction f of the table's
-- vectors to hold f^2 and scans a mid-sized one exactly (every vector, ~5 us each) where the
-- HNSW index is faster (docs/retrieval.md, "Index or exact scan"). The HNSW
-- scan filters to the namespace as it goes, visiting about depth * total / docs vectors; when
-- that is at most half the namespace's own size, the index is cheaper, and sorts are disabled
-- for the rest of this read-only transaction so the planner takes it (its later statements
-- are re-reads by id, which sort nothing). Otherwise the planner decides, as before. `docs`
-- is the namespace's live memories at the last lexicon refresh; a namespace not yet counted,
-- or a table never analysed, leaves the planner alone.
SELECT set_config('enable_sort', 'off', true) AS enable_sort
  FROM lexicon_state s, pg_class c
 WHERE s.namespace = %(namespace)s
   AND c.oid = 'memory_embeddings'::regclass
   AND c.reltuples > 0
   AND s.docs::float8 * s.docs >= 2.0 * %(depth)s * c.reltuples;

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
       AND (%(tags)s::text[] IS NULL
            OR m.tag_ns_tsv @@ memhub_tag_gate(%(namespace)s, %(tags)s::text[]))
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

-- name: fetch_live_scored
-- fetch_live with each memory's cosine distance to the query (NULL without a current vector of
-- the configured model): the retrieval guard (storage/retrieval_guard.py) judges every result
-- by it, also those only the lexical leg found.
SELECT m.*, (e.embedding <=> %(embedding)s::vector)::float8 AS distance
  FROM live_memories m
  LEFT JOIN memory_embeddings e
         ON e.memory_id = m.id AND e.revision = m.current_revision
        AND e.namespace = %(namespace)s AND e.model = %(model)s
 WHERE m.id = ANY (%(ids)s::uuid[])
   AND m.namespace = %(namespace)s
   AND NOT m.quarantined;

-- name: fetch_live_context
-- fetch_live for memory_context: only what it sends (as context_recent), and each memory's
-- current vector of the configured model for MMR's similarity (NULL without one; %(model)s is
-- '' when no model is loaded) with its cosine distance to the query (NULL without a query
-- vector) for the retrieval guard.
SELECT m.id, m.kind, m.current_revision, m.title, m.content, m.needs_reverification,
       e.embedding, (e.embedding <=> %(embedding)s::vector)::float8 AS distance
  FROM live_memories m
  LEFT JOIN memory_embeddings e
         ON e.memory_id = m.id AND e.revision = m.current_revision
        AND e.namespace = %(namespace)s AND e.model = %(model)s
 WHERE m.id = ANY (%(ids)s::uuid[])
   AND m.namespace = %(namespace)s
   AND NOT m.quarantined;

-- name: context_recent
-- memory_context without a query: the live memories of the namespace, newest first, with
-- their current vectors (as fetch_live_context). Only what it sends
-- (storage/postgres/retrieval/context.context_item): the stored tsvectors were half the cost of reading 300
-- rows (8.5 -> 4 ms at 100k).
SELECT m.id, m.kind, m.current_revision, m.title, m.content, m.needs_reverification,
       e.embedding
  FROM live_memories m
  LEFT JOIN memory_embeddings e
         ON e.memory_id = m.id AND e.revision = m.current_revision
        AND e.namespace = %(namespace)s AND e.model = %(model)s
 WHERE m.namespace = %(namespace)s
   AND NOT m.quarantined
   AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s::text[]))
 ORDER BY m.updated_at DESC, m.seq DESC
 LIMIT %(depth)s;
