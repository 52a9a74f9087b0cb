-- 0045: memory as of a date (`as_of` on memory_search, memory_list, memory_get and
-- memory_context; docs/retrieval.md, As of a date).
--
-- What a past read needs, and where it is recorded:
-- - when a memory was born: memories.created_at (the database clock, 0002);
-- - which revision it had: memory_revisions.created_at of each revision (append-only);
-- - when it stopped being current: by expiry, memories.expires_at (written with the memory;
--   no memhub path changes it); by supersession or forget, nothing until now:
--   `memories.updated_at` moves with every later update, and the change feed is trimmed after
--   its retention. `retired_at` records it: the start of the transaction that made the memory
--   SUPERSEDED or DELETED, the same instant as its successor's created_at.
-- A purge deletes the memory and its revisions: as_of cannot bring it back.

ALTER TABLE memories ADD COLUMN retired_at timestamptz;

-- Memories retired before this migration: the earliest of what still says when. The change
-- feed's `superseded` / `forgotten` event and the successor's created_at are exact (both are
-- the retiring transaction's start); updated_at, the last update of the row, is not earlier
-- than the retirement, and later only when the row changed again afterwards (a quarantine or
-- release, a purge relinking it). So the value is exact while the change feed holds the event
-- or the original successor survives, and otherwise an upper bound: such a memory may read as
-- current a little past its real retirement, never retired before it.
-- Under forced row-level security the migrating role sees the rows only with an all-namespace
-- scope; `memhub.restoring` stands the row guards aside (0025), so updated_at is not moved.
-- The deferred mirror check (0002) runs at each statement's end, not at COMMIT: the ALTER
-- below cannot run with trigger events pending.
SELECT set_config('memhub.namespaces', '*', true),
       set_config('memhub.restoring', 'on', true);
SET CONSTRAINTS ALL IMMEDIATE;

WITH feed AS (
    SELECT f.target_id AS id, min(f.at) AS at
      FROM change_feed f
     WHERE f.target_type = 'memory' AND f.what IN ('superseded', 'forgotten')
     GROUP BY f.target_id
)
UPDATE memories m
   SET retired_at = greatest(m.created_at, least(
           (SELECT feed.at FROM feed WHERE feed.id = m.id),
           (SELECT s.created_at FROM memories s WHERE s.id = m.superseded_by),
           m.updated_at))
 WHERE m.status IN ('SUPERSEDED', 'DELETED');

SELECT set_config('memhub.restoring', '', true);

ALTER TABLE memories ADD CONSTRAINT memories_retired_at CHECK (
    (status IN ('SUPERSEDED', 'DELETED')) = (retired_at IS NOT NULL)
    AND (retired_at IS NULL OR retired_at >= created_at));

-- The database writes retired_at, once, as it writes created_at (a client's value is
-- overwritten); an import brings the file's (0025: the guards stand aside, the CHECK does not).
CREATE FUNCTION memories_retired_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.retired_at := NULL;
        RETURN NEW;
    END IF;
    IF OLD.status IN ('ACTIVE', 'EXPIRED') AND NEW.status IN ('SUPERSEDED', 'DELETED') THEN
        NEW.retired_at := now();
    ELSE
        NEW.retired_at := OLD.retired_at;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER memories_retired_at BEFORE INSERT OR UPDATE ON memories
    FOR EACH ROW WHEN (NOT memhub_restoring('memories'::regclass))
    EXECUTE FUNCTION memories_retired_at();

-- A past revision's words, as the current revision's are stored (search_tsv, with its
-- questions' words added): title A, content B, tags C, lineage (written at birth) D.
CREATE FUNCTION memhub_revision_tsv(title text, content text, tags text[], questions text[],
                                    lineage text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english', memhub_with_parts(title)), 'A')
        || setweight(to_tsvector('simple', memhub_with_parts(title)), 'A')
        || setweight(to_tsvector('english', memhub_with_parts(content)), 'B')
        || setweight(to_tsvector('simple', memhub_with_parts(content)), 'B')
        || setweight(to_tsvector('english', memhub_with_parts(memhub_tags_text(tags))), 'C')
        || setweight(to_tsvector('simple', memhub_with_parts(memhub_tags_text(tags))), 'C')
        || setweight(to_tsvector('english', memhub_with_parts(lineage)), 'D')
        || setweight(to_tsvector('simple', memhub_with_parts(lineage)), 'D')
        || to_tsvector('english', memhub_with_parts(memhub_tags_text(questions)))
        || to_tsvector('simple', memhub_with_parts(memhub_tags_text(questions)))
$$;

-- Every memory of a namespace born by p_at, as it was then: at the revision it had then
-- (the last one created by p_at), with its status then. Retired by then (retired_at) it has
-- the status it has now, with its successor or reason; past expires_at by then, EXPIRED;
-- otherwise ACTIVE. SQL and STABLE, so the planner inlines it and a caller's filters (an id,
-- a key, the status) reach the scan; row-level security applies as to any read (security
-- invoker). current_now: the memory is live now at that same revision. Provenance is kept per
-- memory, not per revision: it is given for the current revision only (an older one's is not
-- known). search_tsv: that revision's words, as the lexical leg reads them.
CREATE TYPE memhub_memory_then AS (
    id uuid, seq bigint, namespace text, kind text, key text, metadata jsonb, status text,
    superseded_by uuid, deleted_reason text, revision integer, title text, content text,
    tags text[], questions text[], revised_at timestamptz, author_client text,
    created_at timestamptz, expires_at timestamptz, quarantined boolean, current_now boolean,
    search_tsv tsvector, origin text, model text, client_info text, derived_from jsonb);

CREATE FUNCTION memhub_memories_at(p_namespace text, p_at timestamptz)
RETURNS SETOF memhub_memory_then
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT m.id, m.seq, m.namespace, m.kind, m.key, m.metadata,
           CASE WHEN m.retired_at <= p_at THEN m.status
                WHEN m.expires_at <= p_at THEN 'EXPIRED'
                ELSE 'ACTIVE' END,
           CASE WHEN m.retired_at <= p_at THEN m.superseded_by END,
           CASE WHEN m.retired_at <= p_at THEN m.deleted_reason END,
           r.revision, r.title, r.content, r.tags, r.questions, r.created_at,
           m.author_client, m.created_at, m.expires_at, m.quarantined,
           m.status = 'ACTIVE' AND (m.expires_at IS NULL OR m.expires_at > now())
               AND r.revision = m.current_revision,
           CASE WHEN r.revision = m.current_revision THEN m.search_tsv || m.questions_tsv
                ELSE memhub_revision_tsv(r.title, r.content, r.tags, r.questions, m.lineage)
           END,
           CASE WHEN r.revision = m.current_revision THEN m.origin END,
           CASE WHEN r.revision = m.current_revision THEN m.model END,
           CASE WHEN r.revision = m.current_revision THEN m.client_info END,
           CASE WHEN r.revision = m.current_revision THEN m.derived_from END
      FROM memories m
     CROSS JOIN LATERAL (
        SELECT v.revision, v.title, v.content, v.tags, v.questions, v.created_at
          FROM memory_revisions v
         WHERE v.memory_id = m.id AND v.namespace = m.namespace AND v.created_at <= p_at
         ORDER BY v.revision DESC
         LIMIT 1) r
     WHERE m.namespace = p_namespace
       AND m.created_at <= p_at
$$;

-- Stage 0 as of a time: the memories that were current at p_at, each at its revision then.
-- What live_memories says of the present, said of p_at; every ranked or listed past read
-- selects from it (storage/postgres/sql/as_of.sql).
CREATE FUNCTION memhub_memories_as_of(p_namespace text, p_at timestamptz)
RETURNS SETOF memhub_memory_then
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT * FROM memhub_memories_at(p_namespace, p_at) WHERE status = 'ACTIVE'
$$;
