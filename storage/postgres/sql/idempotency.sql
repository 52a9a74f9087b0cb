-- Keyed by the token (api_tokens.id), not the surface: see storage/postgres/idempotency.py.
-- `surface` is kept as a label of who wrote the record.

-- name: claim_request
-- Claim a client_request_id before writing. A concurrent claim of the same key waits here
-- for ours to commit (then finds the stored answer) or roll back (then claims it itself).
INSERT INTO idempotency_keys (namespace, token_id, surface, request_id, operation, request_hash,
                              response)
VALUES (%(namespace)s, %(token_id)s, %(surface)s, %(request_id)s, %(operation)s,
        %(request_hash)s, '{}'::jsonb)
ON CONFLICT (namespace, token_id, request_id) DO NOTHING
RETURNING request_id;

-- name: stored_request
SELECT operation, request_hash, response
  FROM idempotency_keys
 WHERE namespace = %(namespace)s AND token_id = %(token_id)s AND request_id = %(request_id)s;

-- name: store_response
UPDATE idempotency_keys SET response = %(response)s
 WHERE namespace = %(namespace)s AND token_id = %(token_id)s AND request_id = %(request_id)s;
