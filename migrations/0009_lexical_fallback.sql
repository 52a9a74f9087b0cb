-- The lexical leg's strictest coverage level is read only when it can add something
-- (storage/postgres/lexical_leg.py, docs/performance.md).
--
-- The levels were read strictest first: "every common word", then "the anchor and all but one
-- of the others", ... (0006, 0008). But the memories holding every word are also in the next
-- level (a memory holding all n words holds the anchor and n-2 of the rest, and at least n-1 of
-- them), and that level is read whole unless it overflows p_take. So reading the strictest
-- level first only pays off when the next one is cut; otherwise it is a second walk over the
-- postings of every word (at 100k memories each word of the benchmark is in 4,000-20,000 of
-- them, and a gate costs what its words' postings cost) for rows read again right after.
--
-- Now the strictest level is read after the next one, and only if that one was cut (it filled
-- what was left of p_take): the rows holding every word may then be among those the cut left
-- out. The candidates are the same as before whenever nothing is cut; when it is, they are a
-- superset (the cut level's p_take rows plus the strictest level's, at most 2 x p_take).
--
-- One gate's read is now a function of its own (memhub_lexical_gate, below): SQL, STABLE, not
-- STRICT and without SET clauses, so PostgreSQL inlines it into the calling statement and
-- plans it for that gate (plan_cache_mode = force_custom_plan, as in 0008).

CREATE FUNCTION memhub_lexical_gate(
    p_namespace text, p_terms tsquery[], p_gate tsquery, p_floor int, p_seen uuid[],
    p_limit int, p_kinds text[], p_tags text[]
) RETURNS TABLE (id uuid, matched int)
LANGUAGE sql STABLE ROWS 100
AS $$
    SELECT h.id, h.matched
      FROM (
        SELECT m.id,
               (SELECT count(*) FROM unnest(p_terms) AS x WHERE m.search_tsv @@ x)::int
                   AS matched
          FROM live_memories m
         WHERE m.namespace = p_namespace
           AND NOT m.quarantined
           AND m.search_tsv @@ p_gate
           AND m.id <> ALL (p_seen)
           AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
           AND (p_tags IS NULL OR m.tags @> p_tags)
        OFFSET 0  -- compute `matched` once per row, below the filter on it
      ) h
     WHERE h.matched >= p_floor
     LIMIT p_limit
$$;

-- Same signature and contract as 0008's version, except that a cut level may now bring up to
-- p_take more rows (those of the strictest level).
--
-- enable_indexscan is off for these reads: now that the first level read is a looser one,
-- its LIMIT can make "walk the namespace's btree in order and test @@ on each row until enough
-- match" look cheaper than the GIN index, and when the words are rarer than estimated that
-- walk tests @@ on most of the namespace. The index is read as a bitmap instead (GIN can only
-- be), which the planner then always prefers (enable_seqscan is off too, search_gucs).
CREATE OR REPLACE FUNCTION memhub_lexical_candidates(
    p_namespace text, p_terms tsquery[], p_gates tsquery[], p_floors int[], p_take int,
    p_depth int, p_kinds text[], p_tags text[]
) RETURNS TABLE (id uuid, matched int)
LANGUAGE plpgsql STABLE ROWS 100
SET plan_cache_mode = force_custom_plan
SET enable_indexscan = off
AS $$
DECLARE
    top int := coalesce(cardinality(p_gates), 0);
    level int;
    room int;
    seen uuid[] := '{}';
    ids uuid[];
    counts int[];
BEGIN
    -- With one level there is nothing after the strictest to stand in for it.
    FOR level IN REVERSE (CASE WHEN top > 1 THEN top - 1 ELSE top END)..1 LOOP
        room := p_take - cardinality(seen);
        SELECT coalesce(array_agg(g.id), '{}'), coalesce(array_agg(g.matched), '{}')
          INTO ids, counts
          FROM memhub_lexical_gate(p_namespace, p_terms, p_gates[level], p_floors[level], seen,
                                   room, p_kinds, p_tags) AS g;
        RETURN QUERY SELECT * FROM unnest(ids, counts);
        seen := seen || ids;
        IF level = top - 1 AND cardinality(ids) >= room THEN
            -- Cut: the memories holding every word may be among those left out.
            SELECT coalesce(array_agg(g.id), '{}'), coalesce(array_agg(g.matched), '{}')
              INTO ids, counts
              FROM memhub_lexical_gate(p_namespace, p_terms, p_gates[top], p_floors[top],
                                       seen, p_take, p_kinds, p_tags) AS g;
            RETURN QUERY SELECT * FROM unnest(ids, counts);
            seen := seen || ids;
        END IF;
        EXIT WHEN cardinality(seen) >= p_depth OR cardinality(seen) >= p_take;
    END LOOP;
END
$$;
