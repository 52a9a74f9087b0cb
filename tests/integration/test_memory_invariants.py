"""Each invariant of the memory schema, attacked directly in SQL, bypassing the service.

Every forbidden write runs twice: as the table owner (a superuser here: it bypasses row-level
security but not constraints or triggers) and as `memhub_app`, the role the service uses.
The database must refuse each one.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.support.memories import CURSOR, DESKTOP, NS, open_backend

OTHER_NS = "other-ns"


@pytest.fixture
async def seeded(db_dsn, tmp_path):
    """Memories A (revised to 2), B superseded by C, D in another namespace."""
    async with open_backend(db_dsn, tmp_path) as b:
        a = (await b.remember(DESKTOP, NS, content="alpha", key="ka"))["memory"]
        await b.revise(CURSOR, NS, a["id"], 1, content="alpha two")
        bm = (await b.remember(DESKTOP, NS, content="beta"))["memory"]
        c = (await b.remember(DESKTOP, NS, content="gamma", supersedes=[bm["id"]]))["memory"]
        d = (await b.remember(DESKTOP, OTHER_NS, content="delta"))["memory"]
    return {"A": a["id"], "B": bm["id"], "C": c["id"], "D": d["id"]}


@pytest.fixture(params=["owner", "memhub_app"])
def conn(request, db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        if request.param == "memhub_app":
            c.execute("SET ROLE memhub_app")
            c.execute("SELECT set_config('memhub.namespaces', %s, false)", [f"{NS},{OTHER_NS}"])
        yield c


def refused(conn, sql, params=()):
    with pytest.raises(psycopg.IntegrityError):
        with conn.transaction():
            conn.execute(sql, params)


def test_a_revision_cannot_be_updated(conn, seeded):
    refused(conn, "UPDATE memory_revisions SET content = 'rewritten' WHERE memory_id = %s",
            [seeded["A"]])


def test_a_revision_cannot_be_deleted(conn, seeded):
    refused(conn, "DELETE FROM memory_revisions WHERE memory_id = %s", [seeded["A"]])


def test_a_retired_revision_cannot_become_current_again(conn, seeded):
    refused(conn, "UPDATE memory_revisions SET is_current = true"
                  " WHERE memory_id = %s AND revision = 1", [seeded["A"]])


def test_a_second_current_revision_cannot_be_inserted(conn, seeded):
    refused(conn, "INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
                  " author_client) VALUES (%s, %s, 2, 'dup', 'x')", [seeded["A"], NS])


def test_a_revision_numbered_out_of_sequence_cannot_be_inserted(conn, seeded):
    refused(conn, "INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
                  " author_client, is_current) VALUES (%s, %s, 9, 'gap', 'x', false)",
            [seeded["A"], NS])


def test_supersession_across_namespaces_cannot_be_represented(conn, seeded):
    refused(conn, "UPDATE memories SET status = 'SUPERSEDED', superseded_by = %s WHERE id = %s",
            [seeded["D"], seeded["A"]])


def test_status_and_superseded_by_must_agree(conn, seeded):
    refused(conn, "UPDATE memories SET status = 'SUPERSEDED' WHERE id = %s", [seeded["A"]])
    refused(conn, "UPDATE memories SET superseded_by = %s WHERE id = %s",
            [seeded["C"], seeded["A"]])


def test_a_memory_cannot_supersede_itself(conn, seeded):
    refused(conn, "UPDATE memories SET status = 'SUPERSEDED', superseded_by = id WHERE id = %s",
            [seeded["A"]])


def test_a_superseded_memory_cannot_come_back(conn, seeded):
    refused(conn, "UPDATE memories SET status = 'ACTIVE', superseded_by = NULL WHERE id = %s",
            [seeded["B"]])


def test_a_superseded_memory_cannot_be_repointed(conn, seeded):
    refused(conn, "UPDATE memories SET superseded_by = %s WHERE id = %s",
            [seeded["A"], seeded["B"]])


def test_a_deleted_memory_cannot_come_back(conn, seeded):
    conn.execute("UPDATE memories SET status = 'DELETED' WHERE id = %s", [seeded["C"]])
    refused(conn, "UPDATE memories SET status = 'ACTIVE' WHERE id = %s", [seeded["C"]])


def test_two_active_memories_cannot_share_normalised_content(conn, seeded):
    refused(conn, "INSERT INTO memories (namespace, kind, content, content_hash, author_client)"
                  " SELECT namespace, kind, 'x', content_hash, 'x' FROM memories WHERE id = %s",
            [seeded["A"]])


def test_two_active_memories_cannot_share_a_key(conn, seeded):
    refused(conn, "UPDATE memories SET key = 'ka' WHERE id = %s", [seeded["C"]])


def test_content_cannot_change_without_a_new_revision(conn, seeded):
    refused(conn, "UPDATE memories SET content = 'silently rewritten' WHERE id = %s",
            [seeded["A"]])


def test_the_current_revision_cannot_skip_or_go_back(conn, seeded):
    refused(conn, "UPDATE memories SET current_revision = current_revision + 2 WHERE id = %s",
            [seeded["A"]])
    refused(conn, "UPDATE memories SET current_revision = 1 WHERE id = %s", [seeded["A"]])


def test_a_memory_cannot_drift_from_its_current_revision(conn, seeded):
    # A +1 bump with new content but no matching revision row: refused at COMMIT.
    refused(conn, "UPDATE memories SET current_revision = current_revision + 1,"
                  " content = 'no history' WHERE id = %s", [seeded["A"]])


def test_a_memory_cannot_exist_without_its_first_revision(conn, seeded):
    refused(conn, "INSERT INTO memories (namespace, kind, content, content_hash, author_client)"
                  " VALUES (%s, 'NOTE', 'orphan', '\\x01', 'x')", [NS])


def test_a_memory_is_born_active_at_revision_one(conn, seeded):
    refused(conn, "INSERT INTO memories (namespace, kind, content, content_hash, author_client,"
                  " status) VALUES (%s, 'NOTE', 'born dead', '\\x02', 'x', 'DELETED')", [NS])


def test_author_and_identity_never_change(conn, seeded):
    refused(conn, "UPDATE memories SET author_client = 'forged' WHERE id = %s", [seeded["A"]])
    refused(conn, "UPDATE memories SET namespace = %s WHERE id = %s", [OTHER_NS, seeded["A"]])


def test_timestamps_come_from_the_database_clock(conn, seeded):
    conn.execute("UPDATE memories SET updated_at = '2000-01-01', created_at = created_at"
                 " WHERE id = %s", [seeded["A"]])
    row = conn.execute("SELECT updated_at > now() - interval '1 hour' FROM memories"
                       " WHERE id = %s", [seeded["A"]]).fetchone()
    assert row[0] is True
    refused(conn, "UPDATE memories SET created_at = '2000-01-01' WHERE id = %s", [seeded["A"]])


def test_the_app_role_sees_nothing_without_a_declared_namespace(db_dsn, seeded):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SET ROLE memhub_app")
        assert c.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM memory_revisions").fetchone()[0] == 0


@pytest.fixture
async def gated(db_dsn, tmp_path, seeded):
    """`seeded`, with the intent gate on in NS (OTHER_NS has no profile: off)."""
    async with open_backend(db_dsn, tmp_path) as b:
        await b.namespace_init(DESKTOP, NS, {"intent_gate": "on"})
    return seeded


def test_in_a_gated_namespace_a_memory_is_retired_only_where_a_confirmation_was_spent(
        conn, gated):
    forget = "UPDATE memories SET status = 'DELETED' WHERE id = %s"
    spend = "INSERT INTO gate_nonces (namespace, nonce) VALUES (%s, %s)"
    refused(conn, forget, [gated["A"]])
    refused(conn, "UPDATE memories SET status = 'SUPERSEDED', superseded_by = %s WHERE id = %s",
            [gated["C"], gated["A"]])
    conn.execute(spend, [NS, "a" * 32])
    refused(conn, forget, [gated["A"]])  # that nonce was spent by another transaction
    with pytest.raises(psycopg.IntegrityError), conn.transaction():
        conn.execute(spend, [OTHER_NS, "b" * 32])  # in another namespace
        conn.execute(forget, [gated["A"]])
    conn.execute(forget, [gated["D"]])  # no gate in OTHER_NS

    with conn.transaction():
        conn.execute(spend, [NS, "c" * 32])
        conn.execute(forget, [gated["A"]])
    assert conn.execute("SELECT status FROM memories WHERE id = %s",
                        [gated["A"]]).fetchone()[0] == "DELETED"


def test_the_app_role_cannot_say_which_transaction_spent_a_nonce(db_dsn, seeded):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SET ROLE memhub_app")
        c.execute("SELECT set_config('memhub.namespaces', %s, false)", [NS])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("INSERT INTO gate_nonces (namespace, nonce, spent_in)"
                      " VALUES (%s, %s, pg_current_xact_id())", [NS, "d" * 32])
