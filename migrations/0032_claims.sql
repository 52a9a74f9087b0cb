-- Claims about a repository, and their verdicts (storage/postgres/claims.py, docs/claims.md).
--
-- memory_claims: at most one claim per memory, stated when it is written (memory_remember's
-- `claim`): {"repo": "owner/name", "pr": n} (the pull request is merged) or {"repo", "branch",
-- "sha"} (the branch's head is that commit). Immutable: a different claim is a new memory that
-- supersedes this one.
--
-- claim_verdicts: append-only, one row per check (coord_reconcile, or a GitHub webhook
-- delivery): current | stale | unverifiable, the evidence (what GitHub answered, or why
-- nothing could be asked), and when, by the database clock. A memory's claim is read with its
-- latest verdict (memhub_claim_state, on live_memories and the audit reads).
--
-- github_deliveries: the webhook's delivery ids already handled, so a redelivery does nothing.
-- Not tenant data: an id names a GitHub delivery, nothing of a namespace.
--
-- Both claim tables are tenant tables (forced row-level security, the read-only policies of
-- 0013) whose rows go with their memory, and only in a purge (0023).

CREATE TABLE memory_claims (
    namespace  text NOT NULL,
    memory_id  uuid NOT NULL PRIMARY KEY,
    repo       text NOT NULL CHECK (repo ~ '^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$'),
    pr         integer CHECK (pr BETWEEN 1 AND 2147483647),
    branch     text CHECK (char_length(branch) BETWEEN 1 AND 255),
    sha        text CHECK (sha ~ '^[0-9a-f]{7,40}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((pr IS NOT NULL AND branch IS NULL AND sha IS NULL)
           OR (pr IS NULL AND branch IS NOT NULL AND sha IS NOT NULL)),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id) ON DELETE CASCADE
);
-- The webhook finds the claims a push or a pull request affects, in every namespace.
CREATE INDEX memory_claims_pr ON memory_claims (lower(repo), pr) WHERE pr IS NOT NULL;
CREATE INDEX memory_claims_branch ON memory_claims (lower(repo), branch) WHERE branch IS NOT NULL;
CREATE INDEX memory_claims_namespace ON memory_claims (namespace);

CREATE TABLE claim_verdicts (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace  text NOT NULL,
    memory_id  uuid NOT NULL,
    verdict    text NOT NULL CHECK (verdict IN ('current', 'stale', 'unverifiable')),
    evidence   jsonb NOT NULL CHECK (jsonb_typeof(evidence) = 'object'
                                     AND octet_length(evidence::text) <= 2000),
    source     text NOT NULL CHECK (source IN ('reconcile', 'webhook')),
    checked_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (namespace, memory_id) REFERENCES memories (namespace, id) ON DELETE CASCADE
);
CREATE INDEX claim_verdicts_latest ON claim_verdicts (memory_id, id DESC);
CREATE INDEX claim_verdicts_namespace ON claim_verdicts (namespace);

-- Claims never change; verdicts are only added, stamped by the database clock. Rows leave with
-- their memory in a purge, never otherwise: the guard of 0029's trust tables, taught the
-- verdicts' time column.
CREATE OR REPLACE FUNCTION memhub_trust_rows_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT public.memhub_restoring(TG_RELID) THEN
            IF TG_TABLE_NAME = 'memory_verifications' THEN
                NEW.verified_at := now();
            ELSIF TG_TABLE_NAME = 'claim_verdicts' THEN
                NEW.checked_at := now();
            ELSE
                NEW.created_at := now();
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND public.memhub_purging(TG_RELID) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_claims', 'claim_verdicts']
    LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW'
                       ' EXECUTE FUNCTION memhub_trust_rows_guard()', t || '_guard', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (memhub_ns_visible(namespace))'
                       ' WITH CHECK (memhub_ns_visible(namespace))', t);
        EXECUTE format('CREATE POLICY read_only_insert ON %I AS RESTRICTIVE FOR INSERT'
                       ' WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_update ON %I AS RESTRICTIVE FOR UPDATE'
                       ' USING (true) WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_delete ON %I AS RESTRICTIVE FOR DELETE'
                       ' USING (memhub_writable())', t);
        EXECUTE format('GRANT SELECT, INSERT ON %I TO memhub_app', t);
        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON %I FROM memhub_app', t);
    END LOOP;
END
$$;

CREATE TABLE github_deliveries (
    delivery_id text PRIMARY KEY CHECK (char_length(delivery_id) BETWEEN 1 AND 100),
    event       text NOT NULL CHECK (char_length(event) BETWEEN 1 AND 100),
    received_at timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT ON github_deliveries TO memhub_app;
REVOKE UPDATE, DELETE, TRUNCATE ON github_deliveries FROM memhub_app;

-- A memory's claim with its latest verdict, as every read returns it; NULL without a claim.
-- One index probe per memory read (the primary key), a second only for a memory with a claim.
CREATE FUNCTION memhub_claim_state(p_namespace text, p_id uuid) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object('repo', c.repo, 'pr', c.pr, 'branch', c.branch,
                                                'sha', c.sha))
           || jsonb_build_object(
               'verdict', coalesce(v.verdict, 'unchecked'),
               'evidence', v.evidence,
               'checked_at', v.checked_at,
               'verdict_age_seconds',
               round(extract(epoch FROM now() - v.checked_at))::bigint)
      FROM memory_claims c
      LEFT JOIN LATERAL (
        SELECT cv.verdict, cv.evidence, cv.checked_at FROM claim_verdicts cv
         WHERE cv.memory_id = c.memory_id AND cv.namespace = c.namespace
         ORDER BY cv.id DESC LIMIT 1) v ON true
     WHERE c.memory_id = p_id AND c.namespace = p_namespace
$$;

-- Stage 0 as before (0029), with the claim as its last column. Replaced, not dropped: the
-- columns before it are unchanged.
CREATE OR REPLACE VIEW live_memories WITH (security_invoker = true) AS
    SELECT m.*,
           memhub_needs_reverification(m.namespace, m.id, m.kind, m.status)
               AS needs_reverification,
           memhub_claim_state(m.namespace, m.id) AS claim
      FROM memories m
     WHERE m.status = 'ACTIVE'
       AND (m.expires_at IS NULL OR m.expires_at > now());
GRANT SELECT ON live_memories TO memhub_app;
