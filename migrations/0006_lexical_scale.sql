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
-- 3. Ranking every row that matched ANY query word. The leg now reads index gates for "at least
--    `need` of these words", best coverage first (storage/coverage_tiers.py), and stops once it
--    has enough candidates.

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
