-- Work surfaces: handoffs one client leaves for the next, sessions with an append-only event
-- log, and artifacts stored once by content. Handoffs, sessions, events and artifact
-- references are tenant tables (namespace + forced row-level security). The artifact BYTES
-- are global (deduplicated across namespaces) and reachable only through SECURITY DEFINER
-- functions that demand a visible reference first.

CREATE TABLE handoffs (
    id                 uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    seq                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- stable "latest" order
    namespace          text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    title              text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 300),
    body               text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 20000),
    next_steps         text[] NOT NULL DEFAULT '{}' CHECK (cardinality(next_steps) <= 50),
    refs               text[] NOT NULL DEFAULT '{}' CHECK (cardinality(refs) <= 50),
    for_surface        text CHECK (for_surface IS NULL OR for_surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
    author_client      text NOT NULL,
    status             text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'taken')),
    taken_by           text,
    taken_at           timestamptz,
    quarantined        boolean NOT NULL DEFAULT false,
    quarantine_reasons text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, id),
    -- Taken <=> who and when are known; an open handoff names no taker.
    CHECK ((status = 'taken') = (taken_by IS NOT NULL AND taken_at IS NOT NULL)),
    CHECK (status = 'taken' OR (taken_by IS NULL AND taken_at IS NULL))
);
CREATE INDEX handoffs_ns_status_seq ON handoffs (namespace, status, seq DESC);

CREATE TABLE sessions (
    id                 uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    seq                bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    namespace          text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    title              text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 300),
    author_client      text NOT NULL,
    status             text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    -- The last event sequence number handed out. Appends bump it with UPDATE ... RETURNING
    -- inside their transaction: the row lock serialises appends to one session, and a
    -- rolled-back append rolls its bump back too, so numbers are gap-free 1..N.
    next_seq           bigint NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
    quarantined        boolean NOT NULL DEFAULT false,
    quarantine_reasons text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    closed_at          timestamptz,
    closed_by          text,
    UNIQUE (namespace, id),
    CHECK ((status = 'closed') = (closed_at IS NOT NULL))
);
CREATE INDEX sessions_ns_seq ON sessions (namespace, seq DESC);

CREATE TABLE session_events (
    namespace          text NOT NULL,
    session_id         uuid NOT NULL,
    seq                bigint NOT NULL CHECK (seq >= 1),
    event_id           text CHECK (event_id IS NULL OR char_length(event_id) BETWEEN 1 AND 200),
    type               text NOT NULL CHECK (type ~ '^[a-z0-9][a-z0-9_.:-]{0,63}$'),
    payload            jsonb NOT NULL CHECK (octet_length(payload::text) <= 131072),
    request_hash       bytea NOT NULL,
    author_client      text NOT NULL,
    quarantined        boolean NOT NULL DEFAULT false,
    quarantine_reasons text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq),
    -- Exactly-once appends: one event per (session, event_id). NULL event_ids never collide.
    UNIQUE (session_id, event_id),
    FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id)
);

-- Events are append-only: no UPDATE, no DELETE.
CREATE FUNCTION session_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'session_events is append-only: % refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER session_events_append_only
    BEFORE UPDATE OR DELETE ON session_events
    FOR EACH ROW EXECUTE FUNCTION session_events_append_only();

-- --- artifacts --------------------------------------------------------------------------
-- The bytes, once per distinct content, in 1 MiB bytea chunks. STORAGE EXTERNAL: artifacts
-- are often already compressed (images, archives), and uncompressed TOAST lets
-- substring() fetch only the TOAST pages a ranged read needs.
CREATE TABLE artifact_blobs (
    sha256      bytea PRIMARY KEY CHECK (octet_length(sha256) = 32),
    size        bigint NOT NULL CHECK (size >= 0),
    chunk_size  integer NOT NULL CHECK (chunk_size > 0),
    complete    boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE artifact_chunks (
    sha256 bytea NOT NULL REFERENCES artifact_blobs (sha256),
    idx    integer NOT NULL CHECK (idx >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (sha256, idx)
);
ALTER TABLE artifact_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Which namespace holds which content under which name. Listing reads only this table, so it
-- is confined by row-level security like every other tenant table.
CREATE TABLE artifacts (
    id            uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    namespace     text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    sha256        bytea NOT NULL REFERENCES artifact_blobs (sha256),
    name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    media_type    text NOT NULL CHECK (char_length(media_type) BETWEEN 3 AND 200),
    size          bigint NOT NULL CHECK (size >= 0),
    author_client text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, sha256, name)
);
CREATE INDEX artifacts_ns_seq ON artifacts (namespace, seq DESC);
CREATE INDEX artifacts_sha ON artifacts (sha256);

-- The app role never touches the blob tables directly: the default privileges granted it
-- SELECT/INSERT/UPDATE/DELETE, so take them back. RLS is ENABLED (not forced) with no policy:
-- every role but the owner is refused even if a grant reappears by mistake, while the owner-
-- run SECURITY DEFINER functions below keep access.
REVOKE ALL ON artifact_blobs, artifact_chunks FROM memhub_app;
ALTER TABLE artifact_blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE artifact_chunks ENABLE ROW LEVEL SECURITY;

-- Start storing `sha` (whose bytes the app hashed itself). True: the caller must send the
-- chunks and then finish. False: the content is already stored completely (dedup).
-- A concurrent first upload of the same content waits on the primary key, then sees it.
CREATE FUNCTION memhub_artifact_begin(p_sha bytea, p_size bigint, p_chunk integer)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    existing artifact_blobs%ROWTYPE;
BEGIN
    INSERT INTO artifact_blobs (sha256, size, chunk_size) VALUES (p_sha, p_size, p_chunk)
    ON CONFLICT (sha256) DO NOTHING;
    IF FOUND THEN
        RETURN true;
    END IF;
    SELECT * INTO existing FROM artifact_blobs WHERE sha256 = p_sha FOR UPDATE;
    IF existing.complete THEN
        RETURN false;
    END IF;
    -- Not complete can only mean an interrupted writer's leftovers: start over.
    DELETE FROM artifact_chunks WHERE sha256 = p_sha;
    UPDATE artifact_blobs SET size = p_size, chunk_size = p_chunk WHERE sha256 = p_sha;
    RETURN true;
END
$$;

CREATE FUNCTION memhub_artifact_chunk_put(p_sha bytea, p_idx integer, p_data bytea)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    IF (SELECT complete FROM artifact_blobs WHERE sha256 = p_sha) IS DISTINCT FROM false THEN
        RAISE EXCEPTION 'artifact % is not being uploaded', encode(p_sha, 'hex')
            USING ERRCODE = 'raise_exception';
    END IF;
    INSERT INTO artifact_chunks (sha256, idx, data) VALUES (p_sha, p_idx, p_data);
END
$$;

-- Seal an upload: the database re-hashes the chunks, so no caller can file bytes under a
-- hash they do not have (the blob is shared by every namespace that stores the same content).
CREATE FUNCTION memhub_artifact_finish(p_sha bytea)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    blob artifact_blobs%ROWTYPE;
    actual_size bigint;
    actual_sha bytea;
BEGIN
    SELECT * INTO blob FROM artifact_blobs WHERE sha256 = p_sha FOR UPDATE;
    IF NOT FOUND OR blob.complete THEN
        RAISE EXCEPTION 'artifact % is not being uploaded', encode(p_sha, 'hex')
            USING ERRCODE = 'raise_exception';
    END IF;
    SELECT coalesce(sum(octet_length(data)), 0),
           sha256(coalesce(string_agg(data, ''::bytea ORDER BY idx), ''::bytea))
      INTO actual_size, actual_sha
      FROM artifact_chunks WHERE sha256 = p_sha;
    IF actual_size <> blob.size OR actual_sha <> p_sha THEN
        RAISE EXCEPTION 'artifact content does not match its sha256'
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE artifact_blobs SET complete = true WHERE sha256 = p_sha;
END
$$;

-- Bytes [p_offset, p_offset + p_length) of `sha`, only when a namespace visible to this
-- transaction (memhub.namespaces) holds a reference to it. The visibility test is explicit
-- because a SECURITY DEFINER function run by a superuser owner would bypass row-level
-- security on `artifacts`. NULL: not visible (or absent): the caller cannot tell which.
CREATE FUNCTION memhub_artifact_read(p_sha bytea, p_offset bigint, p_length integer)
RETURNS bytea LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    blob artifact_blobs%ROWTYPE;
    first_idx integer;
    last_idx integer;
    out bytea := ''::bytea;
    piece record;
    from_byte bigint;
    upto_byte bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM artifacts a
                    WHERE a.sha256 = p_sha AND memhub_ns_visible(a.namespace)) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO blob FROM artifact_blobs WHERE sha256 = p_sha AND complete;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF p_offset < 0 OR p_length < 0 OR p_offset > blob.size THEN
        RAISE EXCEPTION 'range outside the artifact' USING ERRCODE = 'data_exception';
    END IF;
    upto_byte := least(p_offset + p_length, blob.size);
    IF upto_byte <= p_offset THEN
        RETURN out;
    END IF;
    first_idx := (p_offset / blob.chunk_size)::integer;
    last_idx := ((upto_byte - 1) / blob.chunk_size)::integer;
    FOR piece IN SELECT idx, data FROM artifact_chunks
                  WHERE sha256 = p_sha AND idx BETWEEN first_idx AND last_idx ORDER BY idx LOOP
        from_byte := greatest(p_offset - piece.idx::bigint * blob.chunk_size, 0);
        out := out || substring(piece.data FROM (from_byte + 1)::integer
                                FOR (upto_byte - piece.idx::bigint * blob.chunk_size - from_byte)::integer);
    END LOOP;
    RETURN out;
END
$$;

REVOKE ALL ON FUNCTION memhub_artifact_begin(bytea, bigint, integer),
                       memhub_artifact_chunk_put(bytea, integer, bytea),
                       memhub_artifact_finish(bytea),
                       memhub_artifact_read(bytea, bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memhub_artifact_begin(bytea, bigint, integer),
                          memhub_artifact_chunk_put(bytea, integer, bytea),
                          memhub_artifact_finish(bytea),
                          memhub_artifact_read(bytea, bigint, integer) TO memhub_app;

-- Row-level security on the tenant tables: FORCE so it binds the table owner too.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['handoffs', 'sessions', 'session_events', 'artifacts']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (memhub_ns_visible(namespace))'
                       ' WITH CHECK (memhub_ns_visible(namespace))', t);
    END LOOP;
END
$$;
-- Events are never rewritten by the app either (the trigger also refuses the owner).
REVOKE UPDATE, DELETE ON session_events FROM memhub_app;
