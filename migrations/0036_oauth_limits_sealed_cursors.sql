-- OAuth registration counted per client address, and change-feed cursors that no longer carry
-- the server's transaction counter.
--
-- oauth_clients.registered_from: the address (an IPv6 /64) a client registered from, so that
-- one address's registrations can be limited per hour and its unapproved clients capped
-- (oauth/clients.py, MEMHUB_OAUTH_REGISTRATIONS_PER_HOUR, MEMHUB_OAUTH_PENDING_CLIENTS_PER_ADDRESS).
-- Clients registered before this migration have none and count for no address.
ALTER TABLE oauth_clients
    ADD COLUMN registered_from text CHECK (char_length(registered_from) BETWEEN 1 AND 64);
CREATE INDEX oauth_clients_source ON oauth_clients (registered_from, created_at)
    WHERE registered_from IS NOT NULL;

-- A change-feed cursor is now sealed with a server secret and bound to its namespace
-- (storage/changes.py); one of the earlier format (base64 of "f1.<tag>.<xid>.<id>", so
-- starting "ZjEu") answers CURSOR_EXPIRED. A session_bootstrap mark holding one would stay
-- expired (the mark moves only after a successful read), so those marks go: the token's next
-- bootstrap is a first one, from the end of the feed.
DELETE FROM bootstrap_marks WHERE cursor LIKE 'ZjEu%';
