-- OAuth 2.1 for remote MCP clients (oauth/): memhub is the authorization server of its own
-- /mcp. A consent is a grant (one token family); its access tokens are ordinary api_tokens rows
-- of kind 'oauth', so the token gate, the scope checks and row-level security treat them like
-- any project-scoped token. Codes and refresh tokens are kept as SHA-256 digests only. None of
-- these tables is tenant data (no namespace column, no RLS).

-- Clients registered dynamically (RFC 7591). `info` is the registered metadata as the client
-- is answered with it; `client_secret` is what the token endpoint compares (it authenticates a
-- token request, which also needs a code and its PKCE verifier or a refresh token).
CREATE TABLE oauth_clients (
    client_id     text PRIMARY KEY CHECK (char_length(client_id) BETWEEN 1 AND 64),
    client_secret text CHECK (client_secret IS NULL OR char_length(client_secret) <= 128),
    client_name   text CHECK (client_name IS NULL OR char_length(client_name) <= 100),
    info          jsonb NOT NULL CHECK (jsonb_typeof(info) = 'object'
                                        AND octet_length(info::text) <= 16384),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);

-- One operator consent: what the client may touch, exactly like a project-scoped token.
-- Revoking it revokes every access and refresh token it issued (the family).
CREATE TABLE oauth_grants (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id     text NOT NULL REFERENCES oauth_clients (client_id),
    surface       text NOT NULL CHECK (surface ~ '^[a-z0-9][a-z0-9-]{0,31}$'),
    namespaces    text[] CHECK (namespaces IS NULL
                                OR cardinality(namespaces) BETWEEN 1 AND 64),
    read_only     boolean NOT NULL,
    tool_profile  text NOT NULL CHECK (tool_profile IN ('core', 'full')),
    resource      text NOT NULL CHECK (char_length(resource) <= 2000),
    scopes        text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    revoked_why   text CHECK (revoked_why IS NULL OR revoked_why ~ '^[a-z_]{1,32}$')
);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- Authorization codes: single-use (used_at is set by the one exchange that wins) and
-- short-lived; a used code is kept until it expires so a replay is recognised.
CREATE TABLE oauth_codes (
    code_hash      bytea PRIMARY KEY CHECK (octet_length(code_hash) = 32),
    grant_id       bigint NOT NULL REFERENCES oauth_grants (id),
    redirect_uri   text NOT NULL CHECK (char_length(redirect_uri) <= 2000),
    redirect_given boolean NOT NULL,
    code_challenge text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43,128}$'),
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- Refresh tokens, rotated on every use: the used one is kept (used_at) so that presenting it
-- again is recognised as theft and revokes the whole grant.
CREATE TABLE oauth_refresh_tokens (
    token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    grant_id   bigint NOT NULL REFERENCES oauth_grants (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

-- Access tokens: api_tokens rows of kind 'oauth' that expire and belong to a grant.
ALTER TABLE api_tokens
    DROP CONSTRAINT api_tokens_kind_check,
    ADD CONSTRAINT api_tokens_kind_check CHECK (kind IN ('surface', 'scoped', 'oauth')),
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN oauth_grant_id bigint REFERENCES oauth_grants (id),
    ADD CONSTRAINT api_tokens_oauth_shape CHECK (
        (kind = 'oauth') = (oauth_grant_id IS NOT NULL AND expires_at IS NOT NULL));
CREATE INDEX api_tokens_oauth_grant ON api_tokens (oauth_grant_id)
    WHERE oauth_grant_id IS NOT NULL;

-- Grants are revoked, never deleted (the audit and api_tokens reference them); codes, refresh
-- tokens and clients that never got a grant are pruned.
REVOKE ALL ON oauth_clients, oauth_grants, oauth_codes, oauth_refresh_tokens FROM memhub_app;
GRANT SELECT, INSERT, DELETE ON oauth_clients TO memhub_app;
GRANT SELECT, INSERT, UPDATE ON oauth_grants TO memhub_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_codes, oauth_refresh_tokens TO memhub_app;
