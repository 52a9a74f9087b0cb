-- OAuth 2.1 authorization server state (storage/postgres/operator/oauth.py; migration 0030). Not tenant
-- data: run in transactions scoped '*'. Secrets are looked up by their SHA-256 only.

-- name: prune_clients
-- Registration is open to anyone, so clients that never got a consent go after a day, and
-- used or expired codes after an hour.
WITH codes AS (DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 hour')
DELETE FROM oauth_clients c
 WHERE c.created_at < now() - interval '1 day'
   AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id);

-- name: count_clients
SELECT count(*)::int AS n FROM oauth_clients;

-- name: lock_source
-- Registrations from one source are counted and inserted one at a time (until COMMIT), so a
-- burst of concurrent ones cannot all pass the count below.
SELECT pg_advisory_xact_lock(hashtextextended('memhub.oauth.register ' || %(source)s, 0));

-- name: source_counts
-- What one source has registered: in the last hour (and when the oldest of those leaves the
-- hour), and still without a consent (and when the oldest of those is pruned, after a day).
WITH mine AS (
    SELECT c.created_at,
           c.created_at > now() - interval '1 hour' AS this_hour,
           NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id) AS pending
      FROM oauth_clients c
     WHERE c.registered_from = %(source)s)
SELECT count(*) FILTER (WHERE this_hour)::int AS this_hour,
       extract(epoch FROM min(created_at) FILTER (WHERE this_hour)
                          + interval '1 hour' - now())::float8 AS hour_frees_in,
       count(*) FILTER (WHERE pending)::int AS pending,
       extract(epoch FROM min(created_at) FILTER (WHERE pending)
                          + interval '1 day' - now())::float8 AS pending_frees_in
  FROM mine;

-- name: insert_client
INSERT INTO oauth_clients (client_id, client_secret, client_name, info, registered_from)
VALUES (%(client_id)s, %(client_secret)s, %(client_name)s, %(info)s, %(source)s);

-- name: get_client
SELECT client_id, client_secret, client_name, info FROM oauth_clients
 WHERE client_id = %(client_id)s;

-- name: insert_grant
INSERT INTO oauth_grants (client_id, surface, namespaces, read_only, tool_profile, resource,
                          scopes)
VALUES (%(client_id)s, %(surface)s, %(namespaces)s, %(read_only)s, %(tool_profile)s,
        %(resource)s, %(scopes)s)
RETURNING id;

-- name: insert_code
INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, redirect_given, code_challenge,
                         expires_at)
VALUES (%(code_hash)s, %(grant_id)s, %(redirect_uri)s, %(redirect_given)s, %(code_challenge)s,
        now() + make_interval(secs => %(ttl_seconds)s));

-- name: get_code
SELECT o.grant_id, o.redirect_uri, o.redirect_given, o.code_challenge,
       extract(epoch FROM o.expires_at)::float8 AS expires_at, o.used_at IS NOT NULL AS used,
       g.client_id, g.resource, g.scopes, g.revoked_at IS NOT NULL AS revoked
  FROM oauth_codes o JOIN oauth_grants g ON g.id = o.grant_id
 WHERE o.code_hash = %(code_hash)s;

-- name: use_code
-- The one exchange that sets used_at gets the grant; any other finds no row.
UPDATE oauth_codes SET used_at = now()
 WHERE code_hash = %(code_hash)s AND used_at IS NULL AND expires_at > now()
RETURNING grant_id;

-- name: grant_for_issue
SELECT g.id, g.client_id, g.surface, g.namespaces, g.read_only, g.tool_profile, g.resource,
       g.scopes, c.client_name
  FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id
 WHERE g.id = %(grant_id)s AND g.revoked_at IS NULL
   FOR UPDATE OF g;

-- name: insert_access_token
INSERT INTO api_tokens (surface, kind, token_hash, prefix, namespaces, read_only, label,
                        tool_profile, expires_at, oauth_grant_id)
VALUES (%(surface)s, 'oauth', %(token_hash)s, %(prefix)s, %(namespaces)s, %(read_only)s,
        %(label)s, %(tool_profile)s, now() + make_interval(secs => %(ttl_seconds)s),
        %(grant_id)s)
RETURNING id, prefix;

-- name: insert_refresh_token
INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at)
VALUES (%(token_hash)s, %(grant_id)s, now() + make_interval(secs => %(ttl_seconds)s));

-- name: get_refresh_token
SELECT r.grant_id, extract(epoch FROM r.expires_at)::float8 AS expires_at,
       r.used_at IS NOT NULL AS used, extract(epoch FROM clock_timestamp() - r.used_at)::float8 AS used_ago,
       g.client_id, g.resource, g.scopes, g.revoked_at IS NOT NULL AS revoked
  FROM oauth_refresh_tokens r JOIN oauth_grants g ON g.id = r.grant_id
 WHERE r.token_hash = %(token_hash)s;

-- name: use_refresh_token
-- Rotation: the one refresh that sets used_at gets the grant; a second use finds no row.
UPDATE oauth_refresh_tokens SET used_at = now()
 WHERE token_hash = %(token_hash)s AND used_at IS NULL AND expires_at > now()
RETURNING grant_id;

-- name: refresh_replay
-- A spent refresh token presented again within the grace period: the pair its use issued
-- (found by the digests of the tokens derived from it), while that pair is still the grant's
-- newest (its refresh token unused) and nothing of it is revoked or expired.
SELECT g.id AS grant_id, g.client_id, g.scopes, t.id AS token_id, t.prefix,
       greatest(1, floor(extract(epoch FROM t.expires_at - now())))::int AS expires_in
  FROM oauth_refresh_tokens r
  JOIN oauth_grants g ON g.id = r.grant_id AND g.revoked_at IS NULL
  JOIN oauth_refresh_tokens n ON n.token_hash = %(next_refresh_hash)s
                             AND n.grant_id = r.grant_id
                             AND n.used_at IS NULL AND n.expires_at > now()
  JOIN api_tokens t ON t.token_hash = %(next_access_hash)s
                   AND t.oauth_grant_id = r.grant_id
                   AND t.revoked_at IS NULL AND t.expires_at > now()
 WHERE r.token_hash = %(token_hash)s
   -- clock_timestamp(), not now(): this transaction may have begun before the winner's
   -- used_at (its start), and a grace period of 0 must answer no retry at all.
   AND r.used_at > clock_timestamp() - make_interval(secs => %(grace_seconds)s);

-- name: get_access_token
SELECT t.id, t.prefix, extract(epoch FROM t.expires_at)::float8 AS expires_at,
       t.revoked_at IS NOT NULL AS revoked, g.id AS grant_id, g.client_id, g.resource, g.scopes
  FROM api_tokens t JOIN oauth_grants g ON g.id = t.oauth_grant_id
 WHERE t.token_hash = %(token_hash)s AND t.kind = 'oauth';

-- name: revoke_grant
UPDATE oauth_grants SET revoked_at = now(), revoked_why = %(why)s
 WHERE id = %(grant_id)s AND revoked_at IS NULL
RETURNING id, client_id;

-- name: revoke_grant_tokens
-- The family: every access token of the grant stops at once; its refresh tokens are refused
-- because the grant is revoked.
UPDATE api_tokens SET revoked_at = now()
 WHERE oauth_grant_id = %(grant_id)s AND revoked_at IS NULL;

-- name: list_grants
SELECT g.id, g.client_id, c.client_name, g.surface, g.namespaces, g.read_only, g.tool_profile,
       g.resource, g.created_at, g.revoked_at, g.revoked_why,
       (SELECT max(t.created_at) FROM api_tokens t WHERE t.oauth_grant_id = g.id) AS last_issued
  FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id
 ORDER BY g.revoked_at IS NOT NULL, g.id DESC
 LIMIT %(limit)s;
