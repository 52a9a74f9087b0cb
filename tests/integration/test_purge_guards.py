"""The purge path is narrow: only the owner's SECURITY DEFINER functions may delete history, and
neither the app's role nor any role that merely sets the purge flag can (migration 0023)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.integration.test_purge import _seed_memory

PURGE_FUNCTIONS = ("memhub_purge_memory", "memhub_purge_handoff", "memhub_purge_session",
                   "memhub_purge_artifact", "memhub_purge_namespace", "memhub_delete_blobs",
                   "memhub_purge_record")


def test_neither_public_nor_the_app_role_may_execute_a_purge_function(db_conn):
    rows = db_conn.execute(
        "SELECT p.proname, has_function_privilege('memhub_app', p.oid, 'EXECUTE'),"
        "       EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner)))"
        "                WHERE grantee = 0)"
        "  FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
        "   AND p.proname = ANY (%s)", [list(PURGE_FUNCTIONS)]).fetchall()
    assert sorted(r[0] for r in rows) == sorted(PURGE_FUNCTIONS)
    assert [r[0] for r in rows if r[1] or r[2]] == []


def test_the_app_role_calling_a_purge_function_is_refused(db_dsn, db_conn):
    memory_id = _seed_memory(db_conn, "stays")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT memhub_purge_memory(%s, 'r', 'app', NULL)", [memory_id])
    assert db_conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)


def test_every_security_definer_function_has_a_fixed_search_path(db_conn):
    loose = db_conn.execute(
        "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND prosecdef"
        "   AND NOT EXISTS (SELECT 1 FROM unnest(proconfig) c WHERE c LIKE 'search_path=%%')"
    ).fetchall()
    assert loose == []


def test_the_app_role_with_the_purge_flag_set_still_cannot_rewrite_or_delete(db_dsn, db_conn):
    """memhub_app can set any custom setting; the guards also want the table's owner, which
    only a purge function (SECURITY DEFINER) is."""
    memory_id = _seed_memory(db_conn, "stays")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute("SELECT set_config('memhub.namespaces', '*', false),"
                     " set_config('memhub.purging', 'on', false)")
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE memories SET lineage = 'rewritten' WHERE id = %s", [memory_id])
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE memories SET status = 'ACTIVE', superseded_by = NULL,"
                         " content = 'rewritten' WHERE id = %s", [memory_id])
        with pytest.raises(psycopg.errors.RestrictViolation):
            conn.execute("DELETE FROM memory_revisions WHERE memory_id = %s", [memory_id])
        for table in ("memories", "memory_corroborations", "memory_embeddings", "handoffs",
                      "sessions", "session_events", "artifacts"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"DELETE FROM {table}")


@pytest.fixture
def delete_capable_role(db_conn):
    """A role that is granted DELETE on the history tables but is not their owner."""
    name = f"probe_{uuid.uuid4().hex[:8]}"
    db_conn.execute(f"CREATE ROLE {name} NOLOGIN")
    db_conn.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
    db_conn.execute(f"GRANT SELECT, DELETE ON memories, memory_revisions, session_events,"
                    f" handoffs, sessions, artifacts TO {name}")
    try:
        yield name
    finally:
        db_conn.execute(f"DROP OWNED BY {name}")
        db_conn.execute(f"DROP ROLE {name}")


@pytest.mark.parametrize("table", ["memory_revisions", "session_events", "memories",
                                   "handoffs", "sessions", "artifacts"])
def test_the_purge_flag_without_the_owners_role_deletes_nothing(db_dsn, db_conn,
                                                                delete_capable_role, table):
    db_conn.execute("SET session_replication_role = replica")  # a row of each, unguarded
    _seed_rows(db_conn)
    db_conn.execute("SET session_replication_role = origin")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(f"SET ROLE {delete_capable_role}")
        conn.execute("SELECT set_config('memhub.namespaces', '*', false),"
                     " set_config('memhub.purging', 'on', false)")
        with pytest.raises(psycopg.errors.RestrictViolation):
            conn.execute(f"DELETE FROM {table}")


@pytest.mark.parametrize("table", ["memories", "handoffs", "sessions", "artifacts"])
def test_outside_a_purge_even_the_owner_cannot_delete_a_memory_handoff_session_or_reference(
        db_conn, table):
    db_conn.execute("SET session_replication_role = replica")
    _seed_rows(db_conn)
    db_conn.execute("SET session_replication_role = origin")
    with pytest.raises(psycopg.errors.RestrictViolation):
        db_conn.execute(f"DELETE FROM {table}")


def _seed_rows(conn: psycopg.Connection) -> None:
    """One row in each guarded table (foreign keys and triggers off: replica mode)."""
    mid, sid, sha = uuid.uuid4(), uuid.uuid4(), b"\x01" * 32
    conn.execute("INSERT INTO memories (id, namespace, kind, content, content_hash,"
                 " author_client) VALUES (%s, 'ns', 'NOTE', 'c', '\\x01', 'web')", [mid])
    conn.execute("INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
                 " author_client) VALUES (%s, 'ns', 1, 'c', 'web')", [mid])
    conn.execute("INSERT INTO handoffs (namespace, title, body, author_client)"
                 " VALUES ('ns', 't', 'b', 'web')")
    conn.execute("INSERT INTO sessions (id, namespace, title, author_client)"
                 " VALUES (%s, 'ns', 't', 'web')", [sid])
    conn.execute("INSERT INTO session_events (namespace, session_id, seq, type, payload,"
                 " request_hash, author_client) VALUES ('ns', %s, 1, 'step', '{}', '\\x01',"
                 " 'web')", [sid])
    conn.execute("INSERT INTO artifacts (namespace, sha256, name, media_type, size,"
                 " author_client) VALUES ('ns', %s, 'n', 'text/plain', 1, 'web')", [sha])

