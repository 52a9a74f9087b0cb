-- A client_request_id belongs to the token that sent it, not to the token's surface.
--
-- Keyed by (namespace, surface, request_id), two tokens of one surface shared a key space: a
-- scoped token could replay the answer another token stored under the same key (created ids,
-- a quarantined handoff's text), or learn from IDEMPOTENCY_MISMATCH that the key was used.
-- The key is now (namespace, token_id, request_id); `surface` stays as a label of the writer.
-- A rotated token is a new api_tokens row, so it starts a fresh key space: a retry sent with
-- the new token after a rotation is a new write.
--
-- Existing records do not say which of a surface's tokens wrote them. Each is given to its
-- surface's active surface token when that token may see the record's namespace: the one
-- token most installations have per surface keeps replaying its own retries across the
-- upgrade, and no record moves to a token that could not read its namespace anyway. The rest
-- (written by a scoped token, or by a surface token since revoked) are deleted: no token can
-- be shown to own them, and handing one to the wrong token is the defect removed here. A
-- retry of such a write sent across the upgrade is written again (a memory with the same
-- content is deduplicated; a handoff or session is created twice).
ALTER TABLE idempotency_keys ADD COLUMN token_id bigint;

-- Under forced row-level security the migrating role sees the rows only with an
-- all-namespace scope.
SELECT set_config('memhub.namespaces', '*', true);

UPDATE idempotency_keys k
   SET token_id = t.id
  FROM api_tokens t
 WHERE t.surface = k.surface
   AND t.kind = 'surface'
   AND t.revoked_at IS NULL
   AND (t.namespaces IS NULL OR k.namespace = ANY (t.namespaces));

DELETE FROM idempotency_keys WHERE token_id IS NULL;

ALTER TABLE idempotency_keys
    ALTER COLUMN token_id SET NOT NULL,
    DROP CONSTRAINT idempotency_keys_pkey,
    ADD PRIMARY KEY (namespace, token_id, request_id);
