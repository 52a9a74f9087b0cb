-- The lexical leg's coverage levels, read in parts (storage/postgres/lexical_leg.py, docs/performance.md).
--
-- A middle level ("at least k of these n common words") is now two gates: the memories that
-- hold the rarest of the words (the anchor) and k-1 of the others, then those that hold k of
-- the others. GIN answers a gate by walking the postings of the words it cannot do without and
-- probing the rest at those positions: for "k of n" that is the n-k+1 rarest words (any n-k+1
-- missing rule a memory out), for the anchored half only the anchor. The anchored half is also
-- where the level's best BM25 candidates are (the anchor has the highest IDF of the common
-- words), so the leg often stops after it (at 100k memories, 150 queries: the lexical leg
-- 18.8 -> 16.4 ms, top 10 identical for 99% of them; docs/performance.md).
--
-- Parts of one level overlap other levels, so "enough rows" is now counted over distinct
-- memories: each gate skips the memories already returned and takes only what is left of
-- p_take. Same signature and contract as migration 0006's version: rows (id, matched) whose
-- `matched` (of p_terms) reaches their gate's floor, at most p_take distinct ids, stopping
-- once p_depth are found.
--
-- The function also carries its own plan_cache_mode (below).

CREATE OR REPLACE FUNCTION memhub_lexical_candidates(
    p_namespace text, p_terms tsquery[], p_gates tsquery[], p_floors int[], p_take int,
    p_depth int, p_kinds text[], p_tags text[]
) RETURNS TABLE (id uuid, matched int)
LANGUAGE plpgsql STABLE ROWS 100
-- Each level planned for its own gate, however many times the function has run (searches no
-- longer set this for the whole transaction: storage/postgres/search.search_gucs).
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    level int;
    seen uuid[] := '{}';
    ids uuid[];
    counts int[];
BEGIN
    FOR level IN REVERSE coalesce(cardinality(p_gates), 0)..1 LOOP
        SELECT coalesce(array_agg(h.id), '{}'), coalesce(array_agg(h.matched), '{}')
          INTO ids, counts
          FROM (
            SELECT h.id, h.matched
              FROM (
                SELECT m.id,
                       (SELECT count(*) FROM unnest(p_terms) AS x WHERE m.search_tsv @@ x)::int
                           AS matched
                  FROM live_memories m
                 WHERE m.namespace = p_namespace
                   AND NOT m.quarantined
                   AND m.search_tsv @@ p_gates[level]
                   AND m.id <> ALL (seen)
                   AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
                   AND (p_tags IS NULL OR m.tags @> p_tags)
                OFFSET 0  -- compute `matched` once per row, below the filter on it
              ) h
             WHERE h.matched >= p_floors[level]
             LIMIT p_take - cardinality(seen)
          ) h;
        RETURN QUERY SELECT * FROM unnest(ids, counts);
        seen := seen || ids;
        EXIT WHEN cardinality(seen) >= p_depth OR cardinality(seen) >= p_take;
    END LOOP;
END
$$;
