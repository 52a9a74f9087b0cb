-- Claims checked only on repositories the operator granted, and webhook deliveries that cannot
-- roll a verdict back (docs/claims.md; storage/postgres/memories/claims.py,
-- storage/postgres/operator/github_grants.py).
--
-- github_repo_grants: the repositories whose claims a namespace may have checked, granted by
-- the operator (memhub-admin github allow / deny, the dashboard), never by a tenant's token.
-- coord_reconcile asks GitHub only about a granted repository (any other claim is recorded
-- `unverifiable`, reason repository_not_granted), and a webhook delivery decides claims only
-- in the namespaces that granted its repository. Repositories are kept in lower case: GitHub's
-- names are case-insensitive. A tenant table (the namespace's own grants are readable by its
-- tokens, and leave with it in a namespace purge); memhub_app may only read it: every change
-- goes through memhub_github_grant, which refuses any transaction not scoped to every
-- namespace, so no tenant transaction can grant itself a repository, whatever the SQL.
CREATE TABLE github_repo_grants (
    namespace  text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    repo       text NOT NULL CHECK (repo ~ '^[a-z0-9][a-z0-9-]{0,38}/[a-z0-9._-]{1,100}$'
                                    AND split_part(repo, '/', 2) NOT IN ('.', '..')),
    granted_by text NOT NULL CHECK (char_length(granted_by) BETWEEN 1 AND 200),
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, repo)
);
-- The webhook finds the namespaces that granted a delivery's repository.
CREATE INDEX github_repo_grants_repo ON github_repo_grants (repo);
ALTER TABLE github_repo_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE github_repo_grants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON github_repo_grants USING (memhub_ns_visible(namespace))
    WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON github_repo_grants AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON github_repo_grants AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON github_repo_grants AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
GRANT SELECT ON github_repo_grants TO memhub_app;
REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON github_repo_grants FROM memhub_app;

-- Grant (p_allow) or withdraw one repository for one namespace; true when that changed
-- anything. Only from a transaction scoped to every namespace: the operator's.
CREATE FUNCTION memhub_github_grant(p_namespace text, p_repo text, p_allow boolean,
                                    p_actor text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    n bigint;
BEGIN
    IF coalesce(current_setting('memhub.namespaces', true), '') <> '*' THEN
        RAISE EXCEPTION 'repository grants are changed by the operator only'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_allow THEN
        INSERT INTO github_repo_grants (namespace, repo, granted_by)
        VALUES (p_namespace, lower(p_repo), p_actor)
        ON CONFLICT (namespace, repo) DO NOTHING;
    ELSE
        DELETE FROM github_repo_grants WHERE namespace = p_namespace AND repo = lower(p_repo);
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$$;

-- A delivery's body is remembered by its SHA-256: the signature covers only the body, so a
-- captured delivery resent under a new X-GitHub-Delivery is the same body, and is refused as
-- handled. Rows from before this migration have none.
ALTER TABLE github_deliveries ADD COLUMN body_sha256 bytea
    CHECK (octet_length(body_sha256) = 32);
CREATE UNIQUE INDEX github_deliveries_body ON github_deliveries (body_sha256);

-- The time of the GitHub state a verdict reflects, on GitHub's clock: a delivery's event time
-- (a push's repository.pushed_at, a pull request's updated_at), or what the API answered (a
-- pull request's updated_at, a branch answer's Date), never later than when it was recorded.
-- NULL when nothing was seen (unverifiable). A webhook delivery older than the newest time a
-- claim recorded changes nothing: an old delivery, replayed once its digest is forgotten or
-- delivered out of order, cannot roll a verdict back.
ALTER TABLE claim_verdicts ADD COLUMN observed_at timestamptz;
CREATE INDEX claim_verdicts_observed ON claim_verdicts (memory_id, observed_at DESC)
    WHERE observed_at IS NOT NULL;

-- A repository named "." or ".." is no repository: as a URL path segment it walks up the
-- API's paths. New claims are refused (claim.repo); rows written before stay, and are never
-- checked, since no grant can name such a repository.
ALTER TABLE memory_claims ADD CONSTRAINT memory_claims_repo_name
    CHECK (split_part(repo, '/', 2) NOT IN ('.', '..')) NOT VALID;
