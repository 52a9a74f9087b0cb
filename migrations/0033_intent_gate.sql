-- The intent gate (storage/postgres/gate.py, docs/intent-gate.md): intents an agent opened and
-- the outcome it recorded, the namespace's skills (guidance applied when an intent matches a
-- trigger), and the confirmation nonces already spent by a two-phase supersede or forget.
-- Tenant tables like the others: forced row-level security on memhub_ns_visible and migration
-- 0013's read-only policies. The namespace purge removes their rows (it finds every table with
-- a `namespace` column).

CREATE TABLE gate_intents (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    namespace      text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    text           text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
    kind           text CHECK (char_length(kind) BETWEEN 1 AND 64),
    tags           text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 32),
    opened_by      text NOT NULL CHECK (char_length(opened_by) BETWEEN 1 AND 200),
    opened_at      timestamptz NOT NULL DEFAULT now(),
    outcome        text CHECK (char_length(outcome) BETWEEN 1 AND 2000),
    closed_by      text CHECK (char_length(closed_by) BETWEEN 1 AND 200),
    closed_at      timestamptz,
    -- An outcome comes with who and when, or not at all.
    CHECK ((outcome IS NULL) = (closed_at IS NULL) AND (outcome IS NULL) = (closed_by IS NULL))
);
CREATE INDEX gate_intents_namespace ON gate_intents (namespace, opened_at DESC);

-- An outcome is recorded once: the row can go from open to closed, never be closed again or
-- reopened, and nothing but the outcome columns changes. Enforced here so that no code path
-- (nor a second process racing the first) can overwrite what happened.
CREATE FUNCTION gate_intents_close_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.closed_at IS NOT NULL THEN
        RAISE EXCEPTION 'intent % already has an outcome', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    IF (NEW.id, NEW.namespace, NEW.text, NEW.kind, NEW.tags, NEW.opened_by, NEW.opened_at)
       IS DISTINCT FROM
       (OLD.id, OLD.namespace, OLD.text, OLD.kind, OLD.tags, OLD.opened_by, OLD.opened_at) THEN
        RAISE EXCEPTION 'an intent is not edited, only closed' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER gate_intents_close_once BEFORE UPDATE ON gate_intents
    FOR EACH ROW EXECUTE FUNCTION gate_intents_close_once();

CREATE TABLE gate_skills (
    namespace   text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    name        text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    trigger     jsonb NOT NULL CHECK (octet_length(trigger::text) <= 4096),
    guidance    text NOT NULL CHECK (char_length(guidance) BETWEEN 1 AND 4000),
    version     integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    updated_by  text NOT NULL CHECK (char_length(updated_by) BETWEEN 1 AND 200),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name)
);

-- A confirmation token is spent by inserting its nonce: the primary key makes a second use
-- fail whatever process tries it.
CREATE TABLE gate_nonces (
    namespace  text NOT NULL CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    nonce      text NOT NULL CHECK (char_length(nonce) BETWEEN 16 AND 64),
    used_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, nonce)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['gate_intents', 'gate_skills', 'gate_nonces'] LOOP
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
        EXECUTE format('REVOKE DELETE ON %I FROM memhub_app', t);
    END LOOP;
END $$;
REVOKE UPDATE ON gate_nonces FROM memhub_app;

-- Every process caches a namespace's gate (profile switch, compiled skills): a change to
-- either is announced on channel memhub_gate with the namespace as payload, from the database
-- itself, so every writer (namespace_init, skill_define, a restore, a purge) invalidates.
CREATE FUNCTION gate_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memhub_gate', CASE TG_OP WHEN 'DELETE' THEN OLD.namespace
                                               ELSE NEW.namespace END);
    RETURN NULL;
END $$;
CREATE TRIGGER gate_skills_notify AFTER INSERT OR UPDATE OR DELETE ON gate_skills
    FOR EACH ROW EXECUTE FUNCTION gate_notify();
CREATE TRIGGER namespace_profiles_gate_notify AFTER INSERT OR UPDATE OR DELETE
    ON namespace_profiles FOR EACH ROW EXECUTE FUNCTION gate_notify();
