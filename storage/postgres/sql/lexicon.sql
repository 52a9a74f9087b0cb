-- The word statistics behind the lexical leg's BM25 (migration 0007, storage/postgres/retrieval/lexicon.py).

-- name: namespaces
-- Every namespace with memories (a loose scan of the (namespace, id) index, one probe per
-- namespace) and its last count, if any. Row-level security limits it to the caller's scope.
WITH RECURSIVE ns(namespace) AS (
    (SELECT namespace FROM memories ORDER BY namespace LIMIT 1)
    UNION ALL
    SELECT (SELECT m.namespace FROM memories m WHERE m.namespace > ns.namespace
             ORDER BY m.namespace LIMIT 1)
      FROM ns
     WHERE ns.namespace IS NOT NULL
)
SELECT ns.namespace, s.docs, s.max_seq,
       s.refreshed_at < now() - make_interval(secs => %(max_age)s) AS old
  FROM ns
  LEFT JOIN lexicon_state s ON s.namespace = ns.namespace
 WHERE ns.namespace IS NOT NULL
 ORDER BY ns.namespace;

-- name: namespaces_in
-- The same for a scope listing its namespaces (a scoped token's `stats`): each probed by the
-- (namespace, id) index. The loose scan above would read, under row-level security, every
-- other namespace's entries that sort before this one's (3,000 per call for one beside 3,000).
SELECT n.namespace, s.docs, s.max_seq,
       s.refreshed_at < now() - make_interval(secs => %(max_age)s) AS old
  FROM unnest(%(namespaces)s::text[]) AS n(namespace)
  LEFT JOIN lexicon_state s ON s.namespace = n.namespace
 WHERE EXISTS (SELECT 1 FROM memories m WHERE m.namespace = n.namespace)
 ORDER BY n.namespace;

-- name: new_since
-- Live memories written after the last count, at most %(cap)s. Asked per namespace with its
-- own values: as one correlated subquery the planner could not see the seq bound and scanned
-- the table (68 ms at 100k memories).
SELECT count(*)::int AS new
  FROM (SELECT 1 FROM memories
         WHERE namespace = %(namespace)s AND status = 'ACTIVE' AND seq > %(after)s
         LIMIT %(cap)s) x;

-- name: refresh
SELECT memhub_refresh_lexicon(%(namespace)s) AS docs;

-- name: planner_stats_due
-- Namespaces (of at least %(min_rows)s memories or vectors) that have doubled since memhub last
-- analyzed them (migration 0020, storage/postgres/retrieval/planner_stats.py). A namespace's vectors are its
-- live memories less those whose embedding is still pending.
SELECT s.namespace, s.docs, s.docs - coalesce(j.pending, 0) AS vectors
  FROM lexicon_state s
  LEFT JOIN (SELECT namespace, count(*)::int AS pending
               FROM embedding_jobs WHERE status = 'pending' GROUP BY namespace) j
         ON j.namespace = s.namespace
 WHERE (s.docs >= %(min_rows)s AND s.docs >= 2 * coalesce(s.analyzed_docs, 0))
    OR (s.docs - coalesce(j.pending, 0) >= %(min_rows)s
        AND s.docs - coalesce(j.pending, 0) >= 2 * coalesce(s.analyzed_vectors, 0))
 ORDER BY s.namespace;

-- name: analyze_namespaces
SELECT memhub_analyze_namespaces() AS analyzed;

-- name: planner_stats_analyzed
-- After an ANALYZE: what every namespace held when it was taken.
UPDATE lexicon_state s
   SET analyzed_docs = s.docs,
       analyzed_vectors = s.docs - coalesce(j.pending, 0)
  FROM lexicon_state t
  LEFT JOIN (SELECT namespace, count(*)::int AS pending
               FROM embedding_jobs WHERE status = 'pending' GROUP BY namespace) j
         ON j.namespace = t.namespace
 WHERE t.namespace = s.namespace;
