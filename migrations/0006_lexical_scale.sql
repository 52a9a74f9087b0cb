-- The lexical leg at scale (docs/perf.md). Three things made it read every row of a namespace:
--
-- 1. Row-level security. A query's own conditions may only be used as index conditions when
--    their functions are LEAKPROOF (otherwise they must run after the policy's filter). The
--    `tsvector @@ tsquery` function, ts_match_vq, is not marked so, so under RLS the GIN index
--    was never used: every search tested @@ on every row of the namespace. ts_match_vq reads
--    only its two arguments and raises no data-dependent error, so it is marked LEAKPROOF here.
--    That needs a superuser (the embedded PostgreSQL is one); on a managed server without that
--    right the migration says so and search stays correct, only slower on large namespaces.
-- 2. One GIN index over every namespace: a small project paid for a large one's postings.
--    The index now leads with the namespace (btree_gin, a trusted contrib extension).
--    fastupdate is off so searches never scan an unmerged pending list after a burst of writes.
-- 3. Ranking every row that matched ANY query word. memhub_coverage_tiers splits "at least `need`
--    of these words" into tiers the index answers directly, best first (all words, all but one,
--    ...); the leg reads tiers in order and stops once it has enough candidates, so a common
--    word can no longer crowd the memories that match every word out of a bounded candidate set.

DO $$
BEGIN
    ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'memhub: cannot mark ts_match_vq LEAKPROOF (needs a superuser): under row-level '
                  'security keyword search will not use its GIN index and will slow down on '
                  'namespaces with tens of thousands of memories. Results are unaffected.';
END
$$;

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE INDEX memories_namespace_tsv ON memories USING gin (namespace, search_tsv)
    WITH (fastupdate = off);
DROP INDEX memories_tsv;

CREATE AGGREGATE memhub_tsquery_and(tsquery) (SFUNC = tsquery_and, STYPE = tsquery);

-- n choose k (exact; n <= 64 here: memhub_query_terms keeps at most 64 words).
CREATE FUNCTION memhub_binomial(n int, k int) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN k < 0 OR k > n THEN 0
                ELSE (SELECT coalesce(round(exp(sum(ln((n - least(k, n - k) + j)::numeric)
                                                  - ln(j::numeric)))), 1)
                        FROM generate_series(1, least(k, n - k)) AS j) END
$$;

-- The tsquery a memory matches when it matches at least `k` of `terms`: the OR of every k-term
-- AND. Built from the smaller of the k-subsets to keep and the (n-k)-subsets to leave out, so
-- "all but one of twelve" costs twelve combinations, not 4,095 partial ones.
CREATE FUNCTION memhub_at_least(terms tsquery[], k int) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH RECURSIVE size AS (
        SELECT cardinality(terms) AS n, least(k, cardinality(terms) - k) AS s
    ), combos(idx) AS (
        SELECT ARRAY[i] FROM size, generate_series(1, size.n) AS i WHERE size.s > 0
        UNION ALL
        SELECT c.idx || i
          FROM combos c, size, generate_series(c.idx[cardinality(c.idx)] + 1, size.n) AS i
         WHERE cardinality(c.idx) < size.s
    ), picked AS (
        SELECT ARRAY(SELECT i FROM generate_series(1, size.n) AS i
                      WHERE (i = ANY (c.idx)) = (size.s = k)) AS keep
          FROM combos c, size WHERE cardinality(c.idx) = size.s
        UNION ALL
        SELECT ARRAY(SELECT generate_series(1, size.n)) FROM size WHERE size.s <= 0
    )
    SELECT memhub_tsquery_or((SELECT memhub_tsquery_and(terms[i]) FROM unnest(p.keep) AS i))
      FROM picked p
     WHERE k BETWEEN 1 AND cardinality(terms)
$$;

-- The lexical leg's index gates, best tier first: tier k holds the memories matching at least k
-- of `terms` (ones matching more came from an earlier tier), from all of them down to `need`.
-- A tier whose gate would take more than 128 combinations is merged into the next affordable
-- one, and when even "at least `need`" is too large the last gate is "at least m" for the
-- largest affordable m < need (a superset; the leg then filters on the exact count).
-- Returns (gate, below): rows of a tier match fewer than `below` terms.
CREATE FUNCTION memhub_coverage_tiers(terms tsquery[], need int,
                                      OUT gates tsquery[], OUT below int[])
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    n int := coalesce(cardinality(terms), 0);
    prev int := n + 1;
    m int;
BEGIN
    gates := '{}'; below := '{}';
    IF n = 0 THEN
        RETURN;
    END IF;
    need := greatest(1, least(need, n));
    FOR k IN REVERSE n..need LOOP
        IF memhub_binomial(n, k) <= 128 THEN
            gates := gates || memhub_at_least(terms, k);
            below := below || prev;
            prev := k;
        END IF;
    END LOOP;
    IF prev > need THEN
        m := need;
        WHILE m > 1 AND memhub_binomial(n, m) > 128 LOOP
            m := m - 1;
        END LOOP;
        gates := gates || memhub_at_least(terms, m);
        below := below || prev;
    END IF;
END
$$;
