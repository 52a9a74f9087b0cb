-- Admin: the audit trail, login backoff shared by every memhub process, the cookie-signing
-- secret, and token bookkeeping for rotation. None of these tables is tenant data (no
-- `namespace` column, no RLS); the app role gets exactly the privileges the app uses, not the
-- schema's default SELECT/INSERT/UPDATE/DELETE.

-- Who did what to access control, from where. Never a token: only its id and short prefix.
CREATE TABLE admin_audit (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    actor        text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 200),
    action       text NOT NULL CHECK (action ~ '^[a-z][a-z_.]{0,63}$'),
    source       text CHECK (source IS NULL OR char_length(source) <= 200),
    token_id     bigint REFERENCES api_tokens (id),
    token_prefix text CHECK (token_prefix IS NULL OR char_length(token_prefix) <= 16),
    detail       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX admin_audit_at ON admin_audit (at DESC, id DESC);
-- The audit is append-only for the app: it can add and read, never rewrite history.
REVOKE ALL ON admin_audit FROM memhub_app;
GRANT SELECT, INSERT ON admin_audit TO memhub_app;

-- Failed /admin logins per client address. Kept in the database, not in process memory, so
-- the backoff holds when memhub runs as several processes (or restarts).
CREATE TABLE admin_login_failures (
    source       text PRIMARY KEY CHECK (char_length(source) <= 200),
    failures     integer NOT NULL CHECK (failures >= 1),
    last_at      timestamptz NOT NULL DEFAULT now(),
    locked_until timestamptz
);
REVOKE ALL ON admin_login_failures FROM memhub_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON admin_login_failures TO memhub_app;

-- Process-independent secrets generated on first use (the /admin cookie-signing key), so a
-- session survives a restart and is valid on every memhub process. Insert-once: the first
-- process to need it wins the race (ON CONFLICT DO NOTHING) and every other one reads it.
CREATE TABLE admin_secrets (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z][a-z_.]{0,63}$'),
    value      bytea NOT NULL CHECK (octet_length(value) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON admin_secrets FROM memhub_app;
GRANT SELECT, INSERT ON admin_secrets TO memhub_app;

-- Tokens: which token a rotation replaced, and bounded labels. Tokens are revoked, never
-- deleted (the audit references them), so the app loses DELETE on them.
ALTER TABLE api_tokens
    ADD COLUMN replaces bigint REFERENCES api_tokens (id),
    ADD CONSTRAINT api_tokens_label_len CHECK (label IS NULL OR char_length(label) <= 100),
    ADD CONSTRAINT api_tokens_namespaces_len CHECK (namespaces IS NULL OR cardinality(namespaces) <= 64);
REVOKE DELETE ON api_tokens FROM memhub_app;
