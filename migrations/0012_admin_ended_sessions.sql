-- /admin sessions ended by logging out. The session cookie is signed, not stored, so without
-- this a copy of it (a shared computer, a proxy log) stayed valid until its TTL after the
-- user had logged out. Each logout records the session id's SHA-256 until the cookie would
-- have expired anyway; every /admin request that carries a logged-in session checks it.
CREATE TABLE admin_ended_sessions (
    sid_hash   bytea PRIMARY KEY CHECK (octet_length(sid_hash) = 32),
    ended_at   timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX admin_ended_sessions_expiry ON admin_ended_sessions (expires_at);
REVOKE ALL ON admin_ended_sessions FROM memhub_app;
GRANT SELECT, INSERT, DELETE ON admin_ended_sessions TO memhub_app;
