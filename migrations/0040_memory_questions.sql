-- 0040: the questions a memory answers (memory_remember / memory_revise `questions`, at most 3).
--
-- A client's model writes them when it saves a memory; search then finds the memory through
-- them as well as through its own words: each question is embedded as its own vector
-- (memory_question_embeddings, written by the embedding worker with the content's vector) and
-- searched as its own lexical field (questions_tsv), and a memory ranks by the best of its
-- content and its questions (docs/retrieval.md, Questions). They are part of a revision, like
-- title, content and tags: stored in memory_revisions, mirrored on the memory, kept by history,
-- export and import, removed by a purge.
--
-- The generated columns rewrite `memories`: the runner vacuums it afterwards.
-- memhub: vacuum memories

ALTER TABLE memory_revisions ADD COLUMN questions text[] NOT NULL DEFAULT '{}';

-- The stage-0 view lists the table's columns: it is rebuilt around the new ones (as in 0032).
DROP VIEW live_memories;
ALTER TABLE memories ADD COLUMN questions text[] NOT NULL DEFAULT '{}';
-- Their words as a field of their own, never mixed into search_tsv: BM25 over the content
-- keeps its frequencies and lengths, so a question can only add a way to be found.
ALTER TABLE memories ADD COLUMN questions_tsv tsvector GENERATED ALWAYS AS (
    to_tsvector('english', memhub_with_parts(memhub_tags_text(questions)))
    || to_tsvector('simple', memhub_with_parts(memhub_tags_text(questions)))
) STORED;
-- The same words as namespaced lexemes (as search_ns_tsv, 0011): the index never reads another
-- project's postings.
ALTER TABLE memories ADD COLUMN questions_ns_tsv tsvector GENERATED ALWAYS AS (
    memhub_ns_lexemes(namespace,
        to_tsvector('english', memhub_with_parts(memhub_tags_text(questions)))
        || to_tsvector('simple', memhub_with_parts(memhub_tags_text(questions))))
) STORED;
CREATE INDEX memories_question_lexemes ON memories USING gin (questions_ns_tsv)
    WITH (fastupdate = off);
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT m.*,
           memhub_needs_reverification(m.namespace, m.id, m.kind, m.status)
               AS needs_reverification,
           memhub_claim_state(m.namespace, m.id) AS claim
      FROM memories m
     WHERE m.status = 'ACTIVE'
       AND (m.expires_at IS NULL OR m.expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;

-- The questions are revisioned columns: they change only with a new revision of an ACTIVE
-- memory (0017's guard, questions added) and the memory mirrors its current revision's.
CREATE OR REPLACE FUNCTION memories_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.created_at := now();
        NEW.updated_at := now();
        IF NEW.status <> 'ACTIVE' OR NEW.current_revision <> 1 THEN
            RAISE EXCEPTION 'a memory is born ACTIVE at revision 1'
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END IF;
    -- A purge relinks or retires the memories the purged one replaced and derives its
    -- successors' lineage again; it changes nothing else.
    IF public.memhub_purging(TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF (NEW.id, NEW.namespace, NEW.seq, NEW.author_client, NEW.created_at)
       IS DISTINCT FROM (OLD.id, OLD.namespace, OLD.seq, OLD.author_client, OLD.created_at) THEN
        RAISE EXCEPTION 'a memory''s identity and provenance never change'
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF OLD.status IN ('SUPERSEDED', 'DELETED')
           OR (OLD.status = 'EXPIRED' AND NEW.status <> 'DELETED') THEN
            RAISE EXCEPTION 'status % is terminal here (refused: % -> %)',
                OLD.status, OLD.status, NEW.status USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    IF OLD.status = 'SUPERSEDED' AND NEW.superseded_by IS DISTINCT FROM OLD.superseded_by THEN
        RAISE EXCEPTION 'superseded_by never changes once set' USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.current_revision <> OLD.current_revision
       AND NEW.current_revision <> OLD.current_revision + 1 THEN
        RAISE EXCEPTION 'current_revision moves by exactly +1' USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.title, NEW.content, NEW.tags, NEW.content_hash, NEW.questions)
       IS DISTINCT FROM (OLD.title, OLD.content, OLD.tags, OLD.content_hash, OLD.questions)
       AND (NEW.current_revision <> OLD.current_revision + 1 OR OLD.status <> 'ACTIVE') THEN
        RAISE EXCEPTION 'revisioned columns change only with a new revision of an ACTIVE memory'
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION memories_mirror_current_revision() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM memories m JOIN memory_revisions r
            ON r.memory_id = m.id AND r.is_current
         WHERE m.id = NEW.id
           AND r.revision = m.current_revision
           AND r.content = m.content
           AND r.title IS NOT DISTINCT FROM m.title
           AND r.tags = m.tags
           AND r.questions = m.questions) THEN
        RAISE EXCEPTION 'memory % does not mirror its current revision', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;

-- One vector per question of a memory's revision, of one model, as memory_embeddings holds the
-- content's. A row of an older revision is never compared (the semantic leg joins on the
-- memory's current revision), so a re-embedding only upserts. Removed with its memory: a purge
-- deletes the memory row and these go with it.
CREATE TABLE memory_question_embeddings (
    memory_id  uuid NOT NULL,
    namespace  text NOT NULL,
    revision   integer NOT NULL,
    ordinal    smallint NOT NULL CHECK (ordinal BETWEEN 1 AND 3),
    model      text NOT NULL,
    embedding  vector(384) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, ordinal),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id) ON DELETE CASCADE
);
CREATE INDEX memory_question_embeddings_hnsw ON memory_question_embeddings
    USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memory_question_embeddings_ns ON memory_question_embeddings (namespace);
ALTER TABLE memory_question_embeddings ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_question_embeddings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_question_embeddings
    USING (memhub_ns_visible(namespace)) WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON memory_question_embeddings AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON memory_question_embeddings AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON memory_question_embeddings AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
GRANT SELECT, INSERT, UPDATE ON memory_question_embeddings TO memhub_app;

ANALYZE memories;
