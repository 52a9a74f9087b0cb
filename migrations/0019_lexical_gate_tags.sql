-- The lexical leg's coverage levels filter by tags through the tags' index (0016), as its rare
-- branch, the semantic leg and the listings already do.
--
-- memhub_lexical_gate (0011) still tested `m.tags @> p_tags` on each memory its words' index
-- found: under row-level security `@>` cannot be an index condition (0016), so a level read
-- every memory holding its words and dropped the untagged ones afterwards. With
-- `tag_ns_tsv @@ memhub_tag_gate(...)` the two GIN indexes are ANDed before any row is read
-- (the same memories: the gate is the tags' exact equality). At 100k memories with a tag on
-- 2%, the lexical statement went 13.6 -> 9.9 ms (docs/performance.md).
CREATE OR REPLACE FUNCTION memhub_lexical_gate(
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
           AND m.search_ns_tsv @@ p_gate
           AND m.id <> ALL (p_seen)
           AND (p_kinds IS NULL OR m.kind = ANY (p_kinds))
           AND (p_tags IS NULL OR m.tag_ns_tsv @@ memhub_tag_gate(p_namespace, p_tags))
        OFFSET 0  -- compute `matched` once per row, below the filter on it
      ) h
     WHERE h.matched >= p_floor
     LIMIT p_limit
$$;
