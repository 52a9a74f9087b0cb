-- The operator's grants of GitHub repositories to namespaces (storage/postgres/operator/
-- github_grants.py; migration 0035). Changed only through memhub_github_grant, which refuses
-- a transaction not scoped to every namespace.

-- name: change
SELECT memhub_github_grant(%(namespace)s, %(repo)s, %(allow)s, %(actor)s) AS changed;

-- name: list
SELECT namespace, repo, granted_by, granted_at
  FROM github_repo_grants
 WHERE %(namespace)s::text IS NULL OR namespace = %(namespace)s::text
 ORDER BY namespace, repo
 LIMIT %(limit)s;
