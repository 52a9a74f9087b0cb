-- A replacement is found by the words of what it replaced.
--
-- A stale-trap query ("Rollbar exception reporting") uses the words of a retired decision
-- ("Error tracking with Rollbar"), while its replacement says something else ("Sentry for
-- error tracking"). Stage 0 keeps the retired memory out of every leg, as it must, so the
-- lexical leg found nothing and the semantic leg found the replacement only when it was near
-- enough in meaning (docs/evaluation.md: q34, q35). Ranking the retired rows to reach their
-- successors would rank outside stage 0; instead the replacement itself now holds the words:
--
-- `lineage` is written once, when a memory is born superseding others, in the same
-- transaction: the title and content of the memories it replaces (and their own lineage, so a
-- chain keeps its oldest words), at most 8,000 characters. It is indexed with weight D in both
-- stored tsvectors (0010's and 0011's expressions, otherwise unchanged), so every lexical path
-- finds the live replacement by the replaced words, and a retired memory is still never a
-- candidate. It is never returned (storage/memory_dicts.memory_dict names its fields), and it
-- never changes afterwards (a trigger below). Memories superseded before this migration keep
-- no lineage: the guard forbids rewriting it, and a rewrite would move their updated_at.
--
-- The two stored tsvectors are dropped and added again (SET EXPRESSION needs PostgreSQL 17),
-- which rewrites the table, drops the namespaced-lexeme index and needs the stage-0 view
-- recreated, as in 0010 and 0011.
-- memhub: vacuum memories

ALTER TABLE memories ADD COLUMN lineage text;
ALTER TABLE memories ADD CONSTRAINT memories_lineage_size
    CHECK (lineage IS NULL OR char_length(lineage) <= 8000);

DROP VIEW live_memories;
ALTER TABLE memories DROP COLUMN search_ns_tsv;
ALTER TABLE memories DROP COLUMN search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '')), 'A')
    || setweight(to_tsvector('simple', coalesce(title, '')), 'A')
    || setweight(to_tsvector('english', content), 'B')
    || setweight(to_tsvector('simple', content), 'B')
    || setweight(to_tsvector('english', memhub_tags_text(tags)), 'C')
    || setweight(to_tsvector('simple', memhub_tags_text(tags)), 'C')
    || setweight(to_tsvector('english', coalesce(lineage, '')), 'D')
    || setweight(to_tsvector('simple', coalesce(lineage, '')), 'D')
) STORED;
ALTER TABLE memories ADD COLUMN search_ns_tsv tsvector GENERATED ALWAYS AS (
    memhub_ns_lexemes(namespace,
        to_tsvector('english', coalesce(title, '')) || to_tsvector('simple', coalesce(title, ''))
        || to_tsvector('english', content) || to_tsvector('simple', content)
        || to_tsvector('english', memhub_tags_text(tags))
        || to_tsvector('simple', memhub_tags_text(tags))
        || to_tsvector('english', coalesce(lineage, ''))
        || to_tsvector('simple', coalesce(lineage, '')))
) STORED;
CREATE INDEX memories_ns_lexemes ON memories USING gin (search_ns_tsv) WITH (fastupdate = off);
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;

-- Written once, at birth: no statement may change it afterwards (memories_guard, 0002, keeps
-- the revisioned columns; this keeps the lineage).
CREATE FUNCTION memories_lineage_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.lineage IS DISTINCT FROM OLD.lineage THEN
        RAISE EXCEPTION 'a memory''s lineage is written once, when it is born'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_lineage_guard
    BEFORE UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_lineage_guard();

-- The planner's estimates for @@ come from the columns' statistics, gone with the old columns.
ANALYZE memories;
