-- session_bootstrap (tools/bootstrap.py): where each token last looked at each namespace's
-- change feed, and an identity for this memhub database.
--
-- bootstrap_marks: one row per (token, namespace), the feed cursor the token's last bootstrap
-- ended at, so the next one reports only what changed since. A tenant table like the others:
-- forced row-level security on memhub_ns_visible and migration 0013's read-only policies (a
-- read-only token reads its mark but cannot move it). Bookkeeping, not project knowledge: the
-- export leaves it out, the namespace purge removes it.
CREATE TABLE bootstrap_marks (
    token_id   bigint NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    namespace  text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    cursor     text NOT NULL CHECK (char_length(cursor) BETWEEN 1 AND 200),
    marked_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (token_id, namespace)
);
CREATE INDEX bootstrap_marks_namespace ON bootstrap_marks (namespace);
ALTER TABLE bootstrap_marks ENABLE ROW LEVEL SECURITY;
ALTER TABLE bootstrap_marks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON bootstrap_marks
    USING (memhub_ns_visible(namespace)) WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON bootstrap_marks AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON bootstrap_marks AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON bootstrap_marks AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
REVOKE DELETE ON bootstrap_marks FROM memhub_app;

-- memhub_instance: one row, made once per database. Two clients whose bootstraps report the same
-- id (and migration level) are reading and writing one memory; a fresh database, a restored
-- copy's new cluster or a second memhub report another. Not secret: it names a database, it
-- grants nothing.
CREATE TABLE memhub_instance (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id         uuid NOT NULL DEFAULT gen_random_uuid(),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO memhub_instance DEFAULT VALUES;
REVOKE INSERT, UPDATE, DELETE ON memhub_instance FROM memhub_app;
GRANT SELECT ON memhub_instance TO memhub_app;
-- The migration level the bootstrap reports; created by the migration runner, before the
-- default privileges of 0001 existed.
GRANT SELECT ON schema_migrations TO memhub_app;
