-- The word statistics behind the lexical leg's BM25 (migration 0007, storage/lexicon.py).

-- name: due
-- Namespaces whose statistics should be recounted: never counted, or with live memories newer
-- than the last count that are many enough to matter (at least %(share)s of the counted ones),
-- or any at all when the namespace is small (recounting it is cheap) or the count is older
-- than %(max_age)s seconds. Namespaces are found by a loose scan of the (namespace, status,
-- seq) index, one probe per namespace; new memories are counted through the same index, at
-- most %(cap)s per namespace. Row-level security limits all of it to the caller's scope.
WITH RECURSIVE ns(namespace) AS (
    (SELECT namespace FROM memories ORDER BY namespace LIMIT 1)
    UNION ALL
    SELECT (SELECT m.namespace FROM memories m WHERE m.namespace > ns.namespace
             ORDER BY m.namespace LIMIT 1)
      FROM ns
     WHERE ns.namespace IS NOT NULL
)
SELECT namespace, docs, new
  FROM (
    SELECT ns.namespace, s.docs, s.refreshed_at,
           (SELECT count(*) FROM (SELECT 1 FROM memories m
                                   WHERE m.namespace = ns.namespace AND m.status = 'ACTIVE'
                                     AND m.seq > coalesce(s.max_seq, 0)
                                   LIMIT %(cap)s) x)::int AS new
      FROM ns
      LEFT JOIN lexicon_state s ON s.namespace = ns.namespace
     WHERE ns.namespace IS NOT NULL
  ) n
 WHERE docs IS NULL
    OR (new > 0 AND (docs <= %(small)s OR new >= docs * %(share)s::float8
                     OR refreshed_at < now() - make_interval(secs => %(max_age)s)))
 ORDER BY namespace;

-- name: refresh
SELECT memhub_refresh_lexicon(%(namespace)s) AS docs;
