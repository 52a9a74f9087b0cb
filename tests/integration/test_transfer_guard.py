"""The restore path of migration 0025: `memhub.restoring` lets the role that owns the tables
insert memories and revisions as an export recorded them (any status, old times), and changes
nothing for `memhub_app`, the service's role, nor for the owner without it."""

from __future__ import annotations

import uuid

import psycopg
import pytest

OLD = "2020-01-02T03:04:05.678901+00:00"
MEMORY = ("INSERT INTO memories (id, namespace, kind, content, content_hash, author_client,"
          " status, current_revision, created_at, updated_at, retired_at, deleted_reason)"
          " VALUES (%s, 'acme', 'NOTE', 'kept', '\\x01', 'cursor', 'DELETED', 2, %s, %s, %s,"
          " 'old')")
REVISION = ("INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
            " author_client, is_current, created_at)"
            " VALUES (%s, 'acme', %s, %s, 'cursor', %s, %s)")


def connect(dsn: str, role: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    if role == "memhub_app":
        conn.execute("SET ROLE memhub_app")
    conn.execute("SELECT set_config('memhub.namespaces', 'acme', false)")
    return conn


def restore(conn: psycopg.Connection, flag: bool) -> uuid.UUID:
    mid = uuid.uuid4()
    with conn.transaction():
        if flag:
            conn.execute("SELECT set_config('memhub.restoring', 'on', true)")
        conn.execute(MEMORY, [mid, OLD, OLD, OLD])
        conn.execute(REVISION, [mid, 1, "first", False, OLD])
        conn.execute(REVISION, [mid, 2, "kept", True, OLD])
    return mid


def test_the_owner_restoring_keeps_status_revisions_and_times(db_dsn):
    with connect(db_dsn, "owner") as conn:
        mid = restore(conn, flag=True)
        row = conn.execute("SELECT status, current_revision, retired_at = %s::timestamptz,"
                           " created_at = %s::timestamptz, updated_at = %s::timestamptz"
                           " FROM memories WHERE id = %s", [OLD, OLD, OLD, mid]).fetchone()
        times = conn.execute("SELECT bool_and(created_at = %s::timestamptz) FROM"
                             " memory_revisions WHERE memory_id = %s", [OLD, mid]).fetchone()
    assert row == ("DELETED", 2, True, True, True) and times == (True,)


@pytest.mark.parametrize("role,flag", [("memhub_app", True), ("memhub_app", False),
                                       ("owner", False)],
                         ids=["app-asking", "app", "owner-not-asking"])
def test_without_the_owner_asking_the_guards_refuse_the_same_rows(db_dsn, role, flag):
    with connect(db_dsn, role) as conn, pytest.raises(psycopg.errors.CheckViolation):
        restore(conn, flag)


def test_the_app_role_asking_still_gets_its_times_stamped(db_dsn):
    """Not refused (an ACTIVE memory at revision 1 is a normal write), but not backdated."""
    mid = uuid.uuid4()
    with connect(db_dsn, "memhub_app") as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.restoring', 'on', true)")
            conn.execute("INSERT INTO memories (id, namespace, kind, content, content_hash,"
                         " author_client, created_at) VALUES (%s, 'acme', 'NOTE', 'x',"
                         " '\\x02', 'cursor', %s)", [mid, OLD])
            conn.execute(REVISION, [mid, 1, "x", True, OLD])
        stamped = conn.execute("SELECT created_at > now() - interval '1 hour' FROM memories"
                               " WHERE id = %s", [mid]).fetchone()
    assert stamped == (True,)


def test_a_restored_revision_past_its_memory_is_refused(db_dsn):
    """Revisions 1 and 2 of a memory at revision 2, and a third: the memory mirrors its
    current revision (the deferred check passes), only the restore guard refuses it."""
    mid = uuid.uuid4()
    with connect(db_dsn, "owner") as conn, pytest.raises(psycopg.errors.CheckViolation):
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.restoring', 'on', true)")
            conn.execute(MEMORY, [mid, OLD, OLD, OLD])
            conn.execute(REVISION, [mid, 1, "first", False, OLD])
            conn.execute(REVISION, [mid, 2, "kept", True, OLD])
            conn.execute(REVISION, [mid, 3, "later", False, OLD])
