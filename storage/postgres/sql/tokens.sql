-- name: find_active_by_hash
SELECT id, surface, kind, token_hash, prefix, namespaces, read_only, tool_profile,
       max_in_flight, rate_per_minute, rate_burst
  FROM api_tokens
 WHERE token_hash = %(token_hash)s AND revoked_at IS NULL
   AND (expires_at IS NULL OR expires_at > now());  -- OAuth access tokens expire

-- name: insert_surface_if_absent
INSERT INTO api_tokens (surface, kind, token_hash, prefix)
VALUES (%(surface)s, 'surface', %(token_hash)s, %(prefix)s)
ON CONFLICT (surface) WHERE revoked_at IS NULL AND kind = 'surface' DO NOTHING
RETURNING id;
