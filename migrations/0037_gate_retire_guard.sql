-- The intent gate below every code path (docs/intent-gate.md, storage/postgres/memories/
-- retire_gate.py): in a namespace whose profile has intent_gate "on", a memory is retired
-- (made SUPERSEDED or DELETED) only by a transaction that spent a confirmation, that is,
-- inserted a nonce into gate_nonces in that same transaction. The service verifies the
-- confirmation (its signature, token, tool and arguments) and spends it in the write's own
-- transaction; this trigger refuses the retirement whatever statement, store or tool tries it
-- otherwise (the curator, a script, a future code path).
--
-- Which transaction spent a nonce is recorded by the database, not by the caller: `spent_in`
-- defaults to the inserting transaction's id, and memhub_app may insert only the namespace and
-- the nonce, so it cannot stamp a nonce as spent by another transaction.

ALTER TABLE gate_nonces ADD COLUMN spent_in xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX gate_nonces_spent_in ON gate_nonces (spent_in);
REVOKE INSERT ON gate_nonces FROM memhub_app;
GRANT INSERT (namespace, nonce) ON gate_nonces TO memhub_app;

CREATE FUNCTION memories_gate_retire() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM namespace_profiles p
                WHERE p.namespace = NEW.namespace AND p.profile ->> 'intent_gate' = 'on')
       AND NOT EXISTS (SELECT 1 FROM gate_nonces n
                        WHERE n.namespace = NEW.namespace AND n.spent_in = pg_current_xact_id())
    THEN
        RAISE EXCEPTION 'memory % is in a namespace with the intent gate on: it is retired only '
                        'with a confirmation spent in the same transaction', NEW.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_gate_retire';
    END IF;
    RETURN NEW;
END $$;

-- A retirement takes a live memory (ACTIVE, or EXPIRED, which forget accepts) to SUPERSEDED or
-- DELETED. Not one: expiry (ACTIVE -> EXPIRED), which nobody chooses at that moment (the memory
-- was written with its expires_at); the operator's purge of a memory, which deletes rows and
-- marks what that memory had replaced (already SUPERSEDED) DELETED; an import, which inserts.
CREATE TRIGGER memories_gate_retire BEFORE UPDATE OF status ON memories
    FOR EACH ROW
    WHEN (OLD.status IN ('ACTIVE', 'EXPIRED') AND NEW.status IN ('SUPERSEDED', 'DELETED'))
    EXECUTE FUNCTION memories_gate_retire();
