-- One display of a token the dashboard just issued, across its POST-redirect-GET (so that
-- reloading the page never rotates again). The token itself is never stored: it is split
-- with a one-time pad. This row holds the random pad, the flash cookie holds the token XOR
-- the pad; either half alone says nothing about the token. The GET that shows the token
-- deletes the row as it reads it, so a copy of the cookie shows nothing, and a row nobody
-- reads is dropped once expired (on the next insert).
CREATE TABLE admin_flash (
    id_hash    bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),  -- SHA-256 of the flash id
    sid_hash   bytea NOT NULL CHECK (octet_length(sid_hash) = 32),    -- the admin session's
    pad        bytea NOT NULL CHECK (octet_length(pad) BETWEEN 1 AND 256),
    detail     jsonb NOT NULL CHECK (jsonb_typeof(detail) = 'object'),  -- what to show, no secret
    expires_at timestamptz NOT NULL
);
CREATE INDEX admin_flash_expiry ON admin_flash (expires_at);
REVOKE ALL ON admin_flash FROM memhub_app;
GRANT SELECT, INSERT, DELETE ON admin_flash TO memhub_app;
