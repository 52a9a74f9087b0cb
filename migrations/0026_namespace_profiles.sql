-- A namespace's profile: what `namespace_init` declares about a project (storage/profiles.py
-- validates it: a description, memory_context's quota per kind, re-verification periods per
-- kind, a suggested tool profile, switches of later capabilities). One row per namespace; a
-- namespace without one behaves as every namespace did before profiles existed.
--
-- A tenant table like the others: forced row-level security on memhub_ns_visible, and the
-- read-only restrictive policies of migration 0013, so every token of the namespace reads it and
-- only read-write tokens write it, in the database as in the tool. The app never deletes a
-- profile (a later namespace_init replaces it): only the namespace purge (migration 0023, which
-- empties every table with a `namespace` column, this one included) removes it.
CREATE TABLE namespace_profiles (
    namespace  text PRIMARY KEY CHECK (namespace ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    profile    jsonb NOT NULL
               CHECK (jsonb_typeof(profile) = 'object' AND octet_length(profile::text) <= 16384),
    -- Counts the profile's changes from 1: namespace_init's compare-and-set (expected_version).
    version    integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text NOT NULL CHECK (char_length(updated_by) BETWEEN 1 AND 200)
);
ALTER TABLE namespace_profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE namespace_profiles FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON namespace_profiles
    USING (memhub_ns_visible(namespace)) WITH CHECK (memhub_ns_visible(namespace));
CREATE POLICY read_only_insert ON namespace_profiles AS RESTRICTIVE FOR INSERT
    WITH CHECK (memhub_writable());
CREATE POLICY read_only_update ON namespace_profiles AS RESTRICTIVE FOR UPDATE
    USING (true) WITH CHECK (memhub_writable());
CREATE POLICY read_only_delete ON namespace_profiles AS RESTRICTIVE FOR DELETE
    USING (memhub_writable());
REVOKE DELETE ON namespace_profiles FROM memhub_app;
