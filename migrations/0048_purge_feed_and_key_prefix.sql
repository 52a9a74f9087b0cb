-- 0048: a purge leaves nothing in the change feed but one "purged" entry without an id, and
-- memory_list reads a key prefix through an index.
--
-- A purge removes every trace of what it purges but its tombstone (0023). The change feed
-- (0028) kept the purged memory's, handoff's or session's entries (its id, its revisions, who
-- wrote it when) until retention cut them, 30 days by default. Now the row's delete takes them
-- with it: every entry naming it (as the target, or as the replacement of a memory it had
-- superseded: the purge relinks or retires those, and that change is recorded anew), and the
-- feed says once that something of that type was purged, with no id. A namespace purge
-- removes the feed with everything else: its deletes record nothing.

ALTER TABLE change_feed DROP CONSTRAINT change_feed_what_check;
ALTER TABLE change_feed ADD CONSTRAINT change_feed_what_check CHECK (what IN (
    'created', 'revised', 'superseded', 'forgotten', 'expired', 'quarantined', 'released',
    'imported', 'saved', 'taken', 'closed', 'purged'));
ALTER TABLE change_feed ALTER COLUMN target_id DROP NOT NULL;
ALTER TABLE change_feed ADD CONSTRAINT change_feed_purged_has_no_id
    CHECK ((what = 'purged') = (target_id IS NULL));

-- Runs as the purge function's owner (deletes from these tables happen only inside a purge,
-- 0023); the purge functions set memhub.namespaces = '*', so row-level security lets it see
-- every entry of the namespace.
CREATE FUNCTION memhub_feed_purged() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF coalesce(current_setting('memhub.purging_namespace', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    DELETE FROM change_feed
     WHERE namespace = OLD.namespace AND (target_id = OLD.id OR replacement_id = OLD.id);
    INSERT INTO change_feed (namespace, what, target_type, target_id, surface)
    VALUES (OLD.namespace, 'purged',
            CASE TG_TABLE_NAME WHEN 'memories' THEN 'memory' WHEN 'handoffs' THEN 'handoff'
                               ELSE 'session' END,
            NULL, memhub_change_surface());
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION memhub_feed_purged() FROM PUBLIC, memhub_app;
CREATE TRIGGER memories_change_feed_purged
    AFTER DELETE ON memories FOR EACH ROW EXECUTE FUNCTION memhub_feed_purged();
CREATE TRIGGER handoffs_change_feed_purged
    AFTER DELETE ON handoffs FOR EACH ROW EXECUTE FUNCTION memhub_feed_purged();
CREATE TRIGGER sessions_change_feed_purged
    AFTER DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION memhub_feed_purged();
ALTER FUNCTION memhub_purge_namespace(text, text, text, text) SET memhub.purging_namespace = 'on';

-- memory_list's key_prefix: `starts_with(key, prefix)`, which PostgreSQL turns into a range of
-- a btree when the prefix is known at planning. The unique index on ACTIVE keys (0002) uses the
-- database's collation, where that range exists only if the collation is C; text_pattern_ops
-- compares bytes, so it exists whatever the collation, for every status. (LIKE is not
-- leakproof: under row-level security it is never an index condition.)
CREATE INDEX memories_key_prefix ON memories (namespace, key text_pattern_ops)
    WHERE key IS NOT NULL;
