-- Reads as of a past time (`as_of`, docs/retrieval.md, As of a date). Every ranked or listed
-- read selects FROM memhub_memories_as_of (migration 0045): stage 0 said of that time, each
-- memory at the revision it had then. The audit reads by id or key select from
-- memhub_memories_at, which keeps what was retired by then with its status then. Quarantine is
-- applied as it is now. Row-level security scopes each read to its namespace.

-- name: check
-- The database's clock decides what is past (every timestamp memhub keeps is its own).
SELECT %(as_of)s::timestamptz <= now() AS past;

-- name: lexical
-- BM25 over each memory's words at its revision then (title, content, tags, questions and
-- lineage; memhub_revision_tsv), with the namespace's word statistics of now (the IDFs and
-- average length search.lexical_terms reads). A memory must hold at least %(need)s of the
-- query's words, as in the present leg. No index: the as-of set is read whole and each row
-- tested (%(any)s: any of the words), so the cost grows with the namespace's size
-- (docs/performance.md, As of a date).
SELECT id, matched, rank, coverage
  FROM (
    SELECT a.id, a.seq, s.matched, round(s.score * 1e9::float8) / 1e9::float8 AS rank,
           s.covered / %(idf_primary)s::float8 AS coverage
      FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
      -- Each row's words once (OFFSET 0 keeps the planner from repeating the expression in
      -- the test and in each use below).
      CROSS JOIN LATERAL (SELECT a.search_tsv AS tsv OFFSET 0) d
      CROSS JOIN LATERAL (
        -- BM25, k1 = 1.2, b = 0.75, written as search.lexical writes it.
        SELECT coalesce(sum((%(idf)s::float8[])[w.term] * w.tf * 2.2
                            / (w.tf + 1.2 * (0.25 + 0.75 * length(d.tsv)
                                             / greatest(coalesce(%(avg_length)s::float8,
                                                                 length(d.tsv)), 1)))),
                        0) AS score,
               count(*)::int AS matched,
               coalesce(sum((%(idf)s::float8[])[w.term])
                            FILTER (WHERE w.term <= %(primary_terms)s), 0) AS covered
          FROM (
            SELECT q.term, max(coalesce(cardinality(v.positions), 1)) AS tf
              FROM unnest(ts_filter(setweight(setweight(d.tsv, 'D'), 'A',
                                              %(lexemes)s::text[]), '{a}')) AS v
              JOIN unnest(%(lexemes)s::text[], %(term_of)s::int[]) AS q(lexeme, term)
                ON q.lexeme = v.lexeme
             GROUP BY q.term
          ) w
      ) s
     WHERE NOT a.quarantined
       AND (%(kinds)s::text[] IS NULL OR a.kind = ANY (%(kinds)s::text[]))
       AND (%(tags)s::text[] IS NULL OR a.tags @> %(tags)s::text[])
       AND d.tsv @@ %(any)s::tsquery
  ) scored
 WHERE matched >= %(need)s
 ORDER BY rank DESC, seq DESC
 LIMIT %(depth)s;

-- name: semantic
-- The semantic leg as of then. A memory keeps one vector, of the last revision embedded; it
-- is compared only when that revision is the revision then or has the same title and content
-- (the vector is of the same text), so a memory revised since is found by its words alone.
-- Question vectors are not used. Returns the %(depth)s nearest to the query's vector
-- (%(embedding)s, `place` 1..) and the memories in %(ids)s (the lexical leg's), each with its
-- similarity to every text of the question (%(vectors)s) and `votes`: for how many texts it
-- is the nearest, what the retrieval guard reads (storage/retrieval_guard.py). An exact scan
-- of the memories current then (no index holds the past).
WITH usable AS MATERIALIZED (
    SELECT a.id, (e.embedding <=> %(embedding)s::vector)::float8 AS distance,
           ARRAY(SELECT 1 - (e.embedding <=> t.v)::float8
                   FROM unnest(%(vectors)s::vector[]) WITH ORDINALITY AS t(v, i)
                  ORDER BY t.i) AS sims
      FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
      JOIN memory_embeddings e
        ON e.memory_id = a.id AND e.namespace = %(namespace)s AND e.model = %(model)s
     WHERE NOT a.quarantined
       AND (e.revision = a.revision
            OR EXISTS (SELECT 1 FROM memory_revisions er
                        WHERE er.memory_id = e.memory_id AND er.namespace = e.namespace
                          AND er.revision = e.revision AND er.content = a.content
                          AND er.title IS NOT DISTINCT FROM a.title))
       AND (%(kinds)s::text[] IS NULL OR a.kind = ANY (%(kinds)s::text[]))
       AND (%(tags)s::text[] IS NULL OR a.tags @> %(tags)s::text[])
), nearest AS MATERIALIZED (
    SELECT n.id, count(*)::int AS votes
      FROM generate_subscripts(%(vectors)s::vector[], 1) AS t(i)
     CROSS JOIN LATERAL (SELECT u.id FROM usable u ORDER BY u.sims[t.i] DESC, u.id
                          LIMIT 1) n
     GROUP BY n.id
), placed AS (
    SELECT u.id, u.distance, u.sims, row_number() OVER (ORDER BY u.distance, u.id) AS place
      FROM usable u
)
SELECT p.id, p.distance, p.sims, p.place, coalesce(n.votes, 0) AS votes
  FROM placed p
  LEFT JOIN nearest n ON n.id = p.id
 WHERE p.place <= %(depth)s OR p.id = ANY (%(ids)s::uuid[])
 ORDER BY p.place;

-- name: fetch
-- The ranked memories as they were then.
SELECT a.id, a.seq, a.namespace, a.kind, a.key, a.metadata, a.status, a.superseded_by,
       a.deleted_reason, a.revision, a.title, a.content, a.tags, a.questions, a.revised_at,
       a.author_client, a.created_at, a.expires_at, a.quarantined, a.current_now, a.origin,
       a.model, a.client_info, a.derived_from
  FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
 WHERE a.id = ANY (%(ids)s::uuid[])
   AND NOT a.quarantined;

-- name: fetch_context
-- The ranked memories as memory_context sends them, with the vector of their text then (as
-- the semantic leg decides it; NULL otherwise) for MMR's similarity.
SELECT a.id, a.kind, a.revision AS current_revision, a.title, a.content, a.current_now,
       v.embedding
  FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
  LEFT JOIN LATERAL (
    SELECT e.embedding
      FROM memory_embeddings e
     WHERE e.memory_id = a.id AND e.namespace = %(namespace)s AND e.model = %(model)s
       AND (e.revision = a.revision
            OR EXISTS (SELECT 1 FROM memory_revisions er
                        WHERE er.memory_id = e.memory_id AND er.namespace = e.namespace
                          AND er.revision = e.revision AND er.content = a.content
                          AND er.title IS NOT DISTINCT FROM a.title))
  ) v ON true
 WHERE a.id = ANY (%(ids)s::uuid[])
   AND NOT a.quarantined;

-- name: context_recent
-- memory_context without a query, as of then: the memories current then, the most recently
-- written (their revision then) first, with their vectors as fetch_context.
SELECT a.id, a.kind, a.revision AS current_revision, a.title, a.content, a.current_now,
       v.embedding
  FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
  LEFT JOIN LATERAL (
    SELECT e.embedding
      FROM memory_embeddings e
     WHERE e.memory_id = a.id AND e.namespace = %(namespace)s AND e.model = %(model)s
       AND (e.revision = a.revision
            OR EXISTS (SELECT 1 FROM memory_revisions er
                        WHERE er.memory_id = e.memory_id AND er.namespace = e.namespace
                          AND er.revision = e.revision AND er.content = a.content
                          AND er.title IS NOT DISTINCT FROM a.title))
  ) v ON true
 WHERE NOT a.quarantined
   AND (%(kinds)s::text[] IS NULL OR a.kind = ANY (%(kinds)s::text[]))
 ORDER BY a.revised_at DESC, a.seq DESC
 LIMIT %(depth)s;

-- name: list
-- memory_list as of then: the memories current then, newest first, keyset-paginated on seq.
SELECT a.id, a.seq, a.namespace, a.kind, a.key, a.metadata, a.status, a.superseded_by,
       a.deleted_reason, a.revision, a.title, a.content, a.tags, a.questions, a.revised_at,
       a.author_client, a.created_at, a.expires_at, a.quarantined, a.current_now, a.origin,
       a.model, a.client_info, a.derived_from
  FROM memhub_memories_as_of(%(namespace)s, %(as_of)s) a
 WHERE (%(kind)s::text IS NULL OR a.kind = %(kind)s)
   AND (%(tag)s::text IS NULL OR a.tags @> ARRAY[%(tag)s::text])
   AND (%(include_quarantined)s OR NOT a.quarantined)
   AND (%(key_prefix)s::text IS NULL OR starts_with(a.key, %(key_prefix)s))
   AND (%(after_seq)s::bigint IS NULL OR a.seq < %(after_seq)s)
 ORDER BY a.seq DESC
 LIMIT %(limit)s;

-- name: get_by_id
-- One memory as it was then, whatever its status then (an audit read); none if it was born
-- later (or never was).
SELECT a.id, a.seq, a.namespace, a.kind, a.key, a.metadata, a.status, a.superseded_by,
       a.deleted_reason, a.revision, a.title, a.content, a.tags, a.questions, a.revised_at,
       a.author_client, a.created_at, a.expires_at, a.quarantined, a.current_now, a.origin,
       a.model, a.client_info, a.derived_from
  FROM memhub_memories_at(%(namespace)s, %(as_of)s) a
 WHERE a.id = %(id)s;

-- name: get_by_key
-- The memory holding the key then: the one current then, else the latest born by then.
SELECT a.id, a.seq, a.namespace, a.kind, a.key, a.metadata, a.status, a.superseded_by,
       a.deleted_reason, a.revision, a.title, a.content, a.tags, a.questions, a.revised_at,
       a.author_client, a.created_at, a.expires_at, a.quarantined, a.current_now, a.origin,
       a.model, a.client_info, a.derived_from
  FROM memhub_memories_at(%(namespace)s, %(as_of)s) a
 WHERE a.key = %(key)s
 ORDER BY (a.status = 'ACTIVE') DESC, a.seq DESC
 LIMIT 1;

-- name: born
-- When a memory of this id or key was born (NOT_FOUND's details for a memory born after
-- as_of).
SELECT min(created_at) AS created_at
  FROM memories
 WHERE namespace = %(namespace)s
   AND (id = %(id)s::uuid OR key = %(key)s::text);
