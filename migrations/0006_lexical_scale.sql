-- The lexical leg at scale (docs/performance.md). Three things made it read every row of a namespace:
--
-- 1. Row-level security. A query's own conditions may only be used as index conditions when
--    their functions are LEAKPROOF (otherwise they must run after the policy's filter). The
--    `tsvector @@ tsquery` function, ts_match_vq, is not marked so, so under RLS the GIN index
--    was never used: every search tested @@ on every row of the namespace. ts_match_vq reads
--    only its two arguments and raises no data-dependent error, so it is marked LEAKPROOF here.
--    That needs a superuser (the embedded PostgreSQL is one); on a managed server without that
--    right the migration says so and search stays correct, only slower on large namespaces.
-- 2. One GIN index over every namespace: another project's rows matching the words were fetched
--    from the heap, then filtered out. The namespace is now an index key (btree_gin, a trusted
--    contrib extension), so they are excluded inside the index.
--    fastupdate is off so searches never scan an unmerged pending list after a burst of writes.
-- 3. Ranking every row that matched ANY query word. The leg now reads index gates for "at least
--    `need` of these words", strictest coverage first (storage/postgres/lexical_leg.py and
--    memhub_lexical_candidates below), and stops once it has enough candidates.

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

-- The lexical leg's candidates. storage/postgres/lexical_leg.py builds the coverage levels ("at least
-- p_floors[i] of the words", p_gates[i] being the tsquery the GIN index answers); this reads
-- them strictest first, each one complete (up to p_take rows), and stops as soon as a level
-- holds p_depth rows or overflows p_take. It runs in the database, not as one round trip per
-- level, because a level is often a fraction of a millisecond of work. Rows of a level include
-- those of the stricter ones before it: callers group by id. Runs as the caller, so row-level
-- security scopes every level; with plan_cache_mode = force_custom_plan (set by every search
-- transaction) each level is planned for its own gate.
CREATE FUNCTION memhub_lexical_candidates(
    p_namespace text, p_terms tsquery[], p_gates tsquery[], p_floors int[], p_take int,
    p_depth int, p_kinds text[], p_tags text[]
) RETURNS TABLE (id uuid, matched int)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    level int;
    got bigint;
BEGIN
    FOR level IN REVERSE coalesce(cardinality(p_gates), 0)..1 LOOP
        RETURN QUERY
        SELECT h.id, h.matched
          FROM (
            SELECT m.id,
                   (SELECT count(*) FROM unnest(p_terms) AS x WHERE m.search_tsv @@ x)::int
                       AS matched
              FROM live_memories m
             WHERE m.namespace = p_namespace
               AND NOT m.quarantined
               AND m.search_tsv @@ p_gates[level]
               AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
               AND (p_tags IS NULL OR m.tags @> p_tags)
            OFFSET 0  -- compute `matched` once per row, below the filter on it
          ) h
         WHERE h.matched >= p_floors[level]
         LIMIT p_take;
        GET DIAGNOSTICS got = ROW_COUNT;
        EXIT WHEN got >= p_depth OR got >= p_take;
    END LOOP;
END
$$;
