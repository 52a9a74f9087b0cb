-- Versioned memory: memories, append-only revisions, corroborations, idempotency records,
-- the embedding job queue and vectors. Every tenant table carries `namespace` and is confined
-- by row-level security to the namespaces the transaction declared (memhub_ns_visible).

-- array_to_string is only STABLE in general (element output functions); for text[] it is
-- immutable, which a generated column needs.
CREATE FUNCTION memhub_tags_text(tags text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT array_to_string(tags, ' ') $$;

CREATE TABLE memories (
    id               uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- stable keyset order
    namespace        text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    kind             text NOT NULL CHECK (kind IN ('DECISION', 'FACT', 'CONVENTION', 'NOTE', 'TODO')),
    title            text CHECK (title IS NULL OR char_length(title) <= 500),
    content          text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 100000),
    tags             text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 32),
    key              text CHECK (key IS NULL OR char_length(key) BETWEEN 1 AND 200),
    metadata         jsonb,
    status           text NOT NULL DEFAULT 'ACTIVE'
                     CHECK (status IN ('ACTIVE', 'SUPERSEDED', 'DELETED', 'EXPIRED')),
    superseded_by    uuid,
    current_revision integer NOT NULL DEFAULT 1 CHECK (current_revision >= 1),
    content_hash     bytea NOT NULL,
    author_client    text NOT NULL,
    quarantined      boolean NOT NULL DEFAULT false,
    deleted_reason   text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz,
    search_tsv       tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(to_tsvector('simple', coalesce(title, '')), 'A')
        || setweight(to_tsvector('english', content), 'B')
        || setweight(to_tsvector('simple', content), 'B')
        || setweight(to_tsvector('simple', memhub_tags_text(tags)), 'C')
    ) STORED,
    UNIQUE (namespace, id),
    -- Supersession stays inside one namespace: the pointer must name a memory of the same
    -- namespace, so a cross-tenant supersession cannot even be represented. Deferred to COMMIT
    -- because a supersession retires the old memories before inserting their successor (so
    -- the successor may reuse a retired memory's key): the pointer names a row that exists
    -- only later in the same transaction.
    CONSTRAINT memories_superseded_by_fk FOREIGN KEY (namespace, superseded_by)
        REFERENCES memories (namespace, id) DEFERRABLE INITIALLY DEFERRED,
    -- Status and pointer agree: superseded <=> has a successor.
    CHECK ((status = 'SUPERSEDED') = (superseded_by IS NOT NULL)),
    CHECK (superseded_by IS NULL OR superseded_by <> id)
);
-- Dedup: one ACTIVE memory per normalised content per namespace.
CREATE UNIQUE INDEX memories_active_content ON memories (namespace, content_hash) WHERE status = 'ACTIVE';
-- Seed 004's addressing: a key names at most one ACTIVE memory of a namespace.
CREATE UNIQUE INDEX memories_active_key ON memories (namespace, key) WHERE status = 'ACTIVE' AND key IS NOT NULL;
CREATE INDEX memories_ns_status_seq ON memories (namespace, status, seq DESC);
CREATE INDEX memories_superseded_by ON memories (superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX memories_expiring ON memories (expires_at) WHERE status = 'ACTIVE' AND expires_at IS NOT NULL;
CREATE INDEX memories_tsv ON memories USING gin (search_tsv);
CREATE INDEX memories_tags ON memories USING gin (tags);

-- Row guard: what may change on a memory, and how. Enforced for every role, the owner
-- included, so a service bug cannot bring a retired decision back or rewrite history.
--  * identity and provenance (id, namespace, seq, author_client, created_at) never change;
--  * SUPERSEDED and DELETED are terminal; EXPIRED may only become DELETED;
--  * the current revision only ever moves by exactly +1, and the revisioned columns (title,
--    content, tags, content_hash) only change together with it, on an ACTIVE memory;
--  * timestamps come from the database clock, whatever the statement said.
CREATE FUNCTION memories_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF (NEW.title, NEW.content, NEW.tags, NEW.content_hash)
       IS DISTINCT FROM (OLD.title, OLD.content, OLD.tags, OLD.content_hash)
       AND (NEW.current_revision <> OLD.current_revision + 1 OR OLD.status <> 'ACTIVE') THEN
        RAISE EXCEPTION 'revisioned columns change only with a new revision of an ACTIVE memory'
            USING ERRCODE = 'check_violation';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_guard
    BEFORE INSERT OR UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_guard();

-- Stage 0, written once: the only memories any retrieval path may rank. security_invoker
-- keeps the caller's row-level security in force through the view.
CREATE VIEW live_memories WITH (security_invoker = true) AS
    SELECT * FROM memories
     WHERE status = 'ACTIVE'
       AND (expires_at IS NULL OR expires_at > now());

CREATE TABLE memory_revisions (
    memory_id     uuid NOT NULL,
    namespace     text NOT NULL,
    revision      integer NOT NULL CHECK (revision >= 1),
    title         text,
    content       text NOT NULL,
    tags          text[] NOT NULL DEFAULT '{}',
    author_client text NOT NULL,
    is_current    boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, revision),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id)
);
-- Exactly one current revision per memory.
CREATE UNIQUE INDEX memory_revisions_one_current ON memory_revisions (memory_id) WHERE is_current;

-- Revisions are append-only. The only UPDATE allowed is retiring the current flag
-- (true -> false) with every other column unchanged; DELETE is never allowed.
CREATE FUNCTION memory_revisions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'memory_revisions is append-only: DELETE refused'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF OLD.is_current AND NOT NEW.is_current
       AND (NEW.memory_id, NEW.namespace, NEW.revision, NEW.title, NEW.content, NEW.tags,
            NEW.author_client, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.memory_id, OLD.namespace, OLD.revision, OLD.title, OLD.content, OLD.tags,
            OLD.author_client, OLD.created_at) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'memory_revisions is append-only: UPDATE refused'
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER memory_revisions_append_only
    BEFORE UPDATE OR DELETE ON memory_revisions
    FOR EACH ROW EXECUTE FUNCTION memory_revisions_append_only();

-- A revision is born current, numbered as the memory's current revision, stamped by the
-- database clock. Together with the +1 rule on memories and the one-current index this keeps
-- revision numbers contiguous and the history gap-free.
CREATE FUNCTION memory_revisions_insert_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.created_at := now();
    IF NOT NEW.is_current OR NEW.revision IS DISTINCT FROM
           (SELECT m.current_revision FROM memories m WHERE m.id = NEW.memory_id) THEN
        RAISE EXCEPTION 'a new revision must be current and numbered as the memory''s current revision'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_revisions_insert_guard
    BEFORE INSERT ON memory_revisions
    FOR EACH ROW EXECUTE FUNCTION memory_revisions_insert_guard();

-- At COMMIT, every written memory mirrors its current revision (same number, title, content,
-- tags): a memory row cannot drift from its history. Reads the row afresh because several
-- events on one row may be queued in a transaction and only the final state matters.
CREATE FUNCTION memories_mirror_current_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM memories m JOIN memory_revisions r
            ON r.memory_id = m.id AND r.is_current
         WHERE m.id = NEW.id
           AND r.revision = m.current_revision
           AND r.content = m.content
           AND r.title IS NOT DISTINCT FROM m.title
           AND r.tags = m.tags) THEN
        RAISE EXCEPTION 'memory % does not mirror its current revision', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER memories_mirror_current_revision
    AFTER INSERT OR UPDATE ON memories DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION memories_mirror_current_revision();

-- A second client asserting an ACTIVE memory's content: who and when.
CREATE TABLE memory_corroborations (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace     text NOT NULL,
    memory_id     uuid NOT NULL,
    author_client text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id)
);
-- One corroboration per (memory, surface): repeats by the same client are not new evidence,
-- and the table stays bounded by the number of surfaces.
CREATE UNIQUE INDEX memory_corroborations_once ON memory_corroborations (memory_id, author_client);

-- Idempotency: one stored response per (namespace, surface, client_request_id). A retry
-- with the same id replays `response`; a different payload under the same id is refused.
CREATE TABLE idempotency_keys (
    namespace    text NOT NULL,
    surface      text NOT NULL,
    request_id   text NOT NULL CHECK (char_length(request_id) BETWEEN 1 AND 200),
    operation    text NOT NULL,
    request_hash bytea NOT NULL,
    response     jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, surface, request_id)
);

-- Durable embedding work, enqueued in the same transaction as the write it is for.
CREATE TABLE embedding_jobs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   text NOT NULL,
    memory_id   uuid NOT NULL,
    revision    integer NOT NULL,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead')),
    attempts    integer NOT NULL DEFAULT 0,
    run_after   timestamptz NOT NULL DEFAULT now(),
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id)
);
CREATE INDEX embedding_jobs_due ON embedding_jobs (run_after, id) WHERE status = 'pending';
CREATE INDEX embedding_jobs_memory ON embedding_jobs (memory_id);

CREATE TABLE memory_embeddings (
    memory_id  uuid PRIMARY KEY,
    namespace  text NOT NULL,
    revision   integer NOT NULL,
    model      text NOT NULL,
    embedding  vector(384) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id)
);
CREATE INDEX memory_embeddings_hnsw ON memory_embeddings USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memory_embeddings_ns ON memory_embeddings (namespace);

-- Row-level security: FORCE so it binds the table owner too, not only memhub_app.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'memory_revisions', 'memory_corroborations',
                             'idempotency_keys', 'embedding_jobs', 'memory_embeddings']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (memhub_ns_visible(namespace))'
                       ' WITH CHECK (memhub_ns_visible(namespace))', t);
    END LOOP;
END
$$;
GRANT SELECT ON live_memories TO memhub_app;
