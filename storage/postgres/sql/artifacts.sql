-- name: begin
SELECT memhub_artifact_begin(%(sha)s, %(size)s, %(chunk)s) AS upload;

-- name: chunk_put
SELECT memhub_artifact_chunk_put(%(sha)s, %(idx)s, %(data)s);

-- name: hash_chunk
-- The database's share of an upload's work (receive the chunk, hash it) for content already
-- stored by another namespace; see ArtifactStore.artifact_put.
SELECT sha256(%(data)s::bytea) AS digest;

-- name: finish
SELECT memhub_artifact_finish(%(sha)s);

-- name: insert_ref
INSERT INTO artifacts (namespace, sha256, name, media_type, size, author_client)
VALUES (%(namespace)s, %(sha)s, %(name)s, %(media_type)s, %(size)s, %(author)s)
ON CONFLICT (namespace, sha256, name) DO NOTHING
RETURNING *;

-- name: ref
SELECT * FROM artifacts
 WHERE namespace = %(namespace)s AND sha256 = %(sha)s AND name = %(name)s;

-- name: first_ref_in_namespace
SELECT * FROM artifacts
 WHERE namespace = %(namespace)s AND sha256 = %(sha)s
 ORDER BY seq
 LIMIT 1;

-- name: first_visible_ref
-- Row-level security confines this to the namespaces the transaction declared (the token's).
SELECT * FROM artifacts WHERE sha256 = %(sha)s ORDER BY seq LIMIT 1;

-- name: read
SELECT memhub_artifact_read(%(sha)s, %(offset)s, %(length)s) AS data;

-- name: list
SELECT * FROM artifacts
 WHERE namespace = %(namespace)s
   AND (%(before_seq)s::bigint IS NULL OR seq < %(before_seq)s::bigint)
 ORDER BY seq DESC
 LIMIT %(limit)s;
