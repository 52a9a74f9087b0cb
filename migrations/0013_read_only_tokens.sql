-- A read-only token may not change any project's memory. The application refuses its writes
-- (storage/base.check_namespace); this makes the database refuse them too, like the tenant
-- wall beside it (0002): a transaction opened for a read-only caller sets
-- memhub.read_only = 'on' (storage/postgres/scope.py), and every tenant table then refuses INSERT
-- and UPDATE with an error (WITH CHECK) and DELETE matches no row. Restrictive, so it is
-- ANDed with tenant_isolation instead of widening it; SELECT is untouched (no read plan
-- changes). Tables are found like the RLS tests find them: every table with RLS and a
-- namespace column; tests/integration/test_rls.py checks that no tenant table lacks them.
CREATE FUNCTION memhub_writable() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(current_setting('memhub.read_only', true), '') <> 'on'
$$;

DO $$
DECLARE t text;
BEGIN
    FOR t IN
        SELECT c.relname
          FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'namespace'
                             AND NOT a.attisdropped
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
           AND c.relrowsecurity
    LOOP
        EXECUTE format('CREATE POLICY read_only_insert ON %I AS RESTRICTIVE FOR INSERT'
                       ' WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_update ON %I AS RESTRICTIVE FOR UPDATE'
                       ' USING (true) WITH CHECK (memhub_writable())', t);
        EXECUTE format('CREATE POLICY read_only_delete ON %I AS RESTRICTIVE FOR DELETE'
                       ' USING (memhub_writable())', t);
    END LOOP;
END
$$;
