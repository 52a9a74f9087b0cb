-- name: find_active_by_hash
SELECT id, surface, kind, token_hash, prefix, namespaces, read_only
  FROM api_tokens
 WHERE token_hash = %(token_hash)s AND revoked_at IS NULL;

-- name: insert_surface_if_absent
INSERT INTO api_tokens (surface, kind, token_hash, prefix)
VALUES (%(surface)s, 'surface', %(token_hash)s, %(prefix)s)
ON CONFLICT (surface) WHERE revoked_at IS NULL AND kind = 'surface' DO NOTHING
RETURNING id;
