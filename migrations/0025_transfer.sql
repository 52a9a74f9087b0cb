-- Restoring an export (memhub-admin import, storage/postgres/transfer.py) keeps what the
-- database recorded: every memory's status, revision count and times, each revision's time.
--
-- Two guards stamp or refuse exactly those on INSERT: memories_guard (a memory is born ACTIVE
-- at revision 1, stamped now()) and memory_revisions_insert_guard (a revision is born current,
-- stamped now()). They stand aside for a transaction that asks for it with
-- set_config('memhub.restoring', 'on', true), but only when the role inserting could have
-- disabled them anyway: the table's owner or a member of the owning role (the role migrations
-- run as, which memhub-admin connects as). memhub_app owns nothing, so setting the flag
-- changes nothing for the service's connections (tests/integration/test_transfer_guard.py).
--
-- The guard functions are left as they are: the triggers gain a WHEN condition, and restored
-- revisions get a narrower check of their own (numbered within the memory's revisions,
-- current exactly when they are the memory's current revision). Everything else still holds
-- while restoring: the CHECK constraints, the unique indexes, the foreign keys and the
-- deferred check that every memory mirrors its current revision at COMMIT.

CREATE FUNCTION memhub_restoring(tbl regclass) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN coalesce(current_setting('memhub.restoring', true), '') <> 'on' THEN false
        ELSE pg_has_role(current_user, (SELECT c.relowner FROM pg_class c WHERE c.oid = tbl),
                         'USAGE')
    END
$$;

DROP TRIGGER memories_guard ON memories;
CREATE TRIGGER memories_guard
    BEFORE INSERT OR UPDATE ON memories
    FOR EACH ROW WHEN (NOT memhub_restoring('memories'::regclass))
    EXECUTE FUNCTION memories_guard();

DROP TRIGGER memory_revisions_insert_guard ON memory_revisions;
CREATE TRIGGER memory_revisions_insert_guard
    BEFORE INSERT ON memory_revisions
    FOR EACH ROW WHEN (NOT memhub_restoring('memory_revisions'::regclass))
    EXECUTE FUNCTION memory_revisions_insert_guard();

CREATE FUNCTION memory_revisions_restore_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    latest integer;
BEGIN
    SELECT m.current_revision INTO latest
      FROM memories m WHERE m.id = NEW.memory_id AND m.namespace = NEW.namespace;
    IF latest IS NULL OR NEW.revision > latest OR NEW.is_current <> (NEW.revision = latest) THEN
        RAISE EXCEPTION 'a restored revision is numbered within its memory''s revisions and '
                        'current exactly when it is the memory''s current revision'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER memory_revisions_restore_guard
    BEFORE INSERT ON memory_revisions
    FOR EACH ROW WHEN (memhub_restoring('memory_revisions'::regclass))
    EXECUTE FUNCTION memory_revisions_restore_guard();
