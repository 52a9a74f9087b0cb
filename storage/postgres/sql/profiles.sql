-- Namespace profiles (storage/postgres/memories/profiles.py; migration 0026). Every statement names
-- the namespace; row-level security confines it too.

-- name: get
SELECT namespace, profile, version, created_at, updated_at, updated_by
  FROM namespace_profiles
 WHERE namespace = %(namespace)s;

-- name: get_for_update
-- namespace_init compares and replaces under this lock: of two concurrent writers the second
-- reads what the first committed.
SELECT namespace, profile, version, created_at, updated_at, updated_by
  FROM namespace_profiles
 WHERE namespace = %(namespace)s
   FOR UPDATE;

-- name: insert
-- Nothing when a concurrent namespace_init created it first: the caller then locks that row.
INSERT INTO namespace_profiles (namespace, profile, updated_by)
VALUES (%(namespace)s, %(profile)s, %(author)s)
ON CONFLICT (namespace) DO NOTHING
RETURNING namespace, profile, version, created_at, updated_at, updated_by;

-- name: update
UPDATE namespace_profiles
   SET profile = %(profile)s, version = version + 1, updated_at = now(),
       updated_by = %(author)s
 WHERE namespace = %(namespace)s
RETURNING namespace, profile, version, created_at, updated_at, updated_by;

-- name: context_quota
-- memory_context's shares per kind for this namespace; no row (or no key): the default.
SELECT profile -> 'context_quota' AS quota
  FROM namespace_profiles
 WHERE namespace = %(namespace)s;

-- name: restore
-- An import (storage/postgres/operator/restore.py, as the owner): the file's version, times and writer
-- are kept.
INSERT INTO namespace_profiles (namespace, profile, version, created_at, updated_at, updated_by)
VALUES (%(namespace)s, %(profile)s, %(version)s, %(created_at)s, %(updated_at)s,
        %(updated_by)s);
