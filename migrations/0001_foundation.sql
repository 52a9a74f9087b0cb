-- Foundation: extensions, the application role, the tenant-visibility function, tokens.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The role every application connection runs as (SET ROLE in the pool's configure hook).
-- It never owns tables and never bypasses row-level security, so the policies below bind it
-- even when the login role is a superuser (as with the embedded cluster).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memhub_app') THEN
        CREATE ROLE memhub_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END
$$;
GRANT memhub_app TO CURRENT_USER;
GRANT USAGE ON SCHEMA public TO memhub_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO memhub_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO memhub_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO memhub_app;

-- Which namespaces the current transaction may see. The service sets `memhub.namespaces`
-- with set_config(..., true) (transaction-local) to the one namespace a tool call names, or
-- to '*' for operator views. Unset means nothing is visible: a forgotten scope fails closed.
CREATE OR REPLACE FUNCTION memhub_ns_visible(ns text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(current_setting('memhub.namespaces', true), '') = '*'
        OR ns = ANY (string_to_array(nullif(current_setting('memhub.namespaces', true), ''), ','))
$$;

-- MCP bearer tokens. Only a SHA-256 of the token is stored (tokens are 256-bit random, so a
-- fast hash is enough; there is nothing to brute-force). `prefix` is a short non-secret
-- label for the dashboard and the audit.
CREATE TABLE api_tokens (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    surface     text NOT NULL CHECK (surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
    kind        text NOT NULL DEFAULT 'surface' CHECK (kind IN ('surface', 'scoped')),
    token_hash  bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    prefix      text NOT NULL,
    namespaces  text[],                       -- NULL: every namespace
    read_only   boolean NOT NULL DEFAULT false,
    label       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CHECK (namespaces IS NULL OR cardinality(namespaces) > 0)
);
-- One active surface token per surface; scoped tokens are extra and many.
CREATE UNIQUE INDEX api_tokens_one_active_surface
    ON api_tokens (surface) WHERE revoked_at IS NULL AND kind = 'surface';
