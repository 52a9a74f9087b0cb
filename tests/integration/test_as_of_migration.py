"""Migration 0045 records when each memory was retired (`retired_at`) for memories retired
before it: exact where the change feed still holds the event or the original successor is
there, otherwise the row's last update, which is never earlier than the retirement."""

from __future__ import annotations

import psycopg
import pytest

from memhub.storage.postgres.migrate import apply_migrations
from tests.support import db
from tests.support.memories import DESKTOP, NS, open_backend


def retired(conn: psycopg.Connection, memory_id: str):
    return conn.execute("SELECT retired_at FROM memories WHERE id = %s",
                        [memory_id]).fetchone()[0]


def feed_time(conn: psycopg.Connection, memory_id: str, what: str):
    return conn.execute("SELECT min(at) FROM change_feed WHERE target_id = %s AND what = %s",
                        [memory_id, what]).fetchone()[0]


async def test_migration_0045_backfills_retired_at_never_earlier_than_the_retirement(
        admin_dsn, tmp_path):
    with db.migrated_before(admin_dsn, "0045", tmp_path) as dsn:
        async with open_backend(dsn, tmp_path) as b:
            async def made(content: str, **kw) -> dict:
                return (await b.remember(DESKTOP, NS, content=content, **kw))["memory"]

            active = await made("the build uses make")
            old = await made("the queue is Redis")
            new = await made("the queue is PostgreSQL", supersedes=[old["id"]])
            gone = await made("a forgotten note")
            await b.forget(DESKTOP, NS, gone["id"], "wrong")
            unfed = await made("a superseded note whose feed was trimmed")
            heir = await made("its successor", supersedes=[unfed["id"]])
            lost = await made("a forgotten note whose feed was trimmed")
            await b.forget(DESKTOP, NS, lost["id"], "wrong")
        with psycopg.connect(dsn, autocommit=True) as conn:
            truth = {old["id"]: feed_time(conn, old["id"], "superseded"),
                     gone["id"]: feed_time(conn, gone["id"], "forgotten"),
                     lost["id"]: feed_time(conn, lost["id"], "forgotten")}
            conn.execute("DELETE FROM change_feed WHERE target_id = ANY(%s::uuid[])",
                         [[unfed["id"], lost["id"]]])
            # Changed again after its retirement: its updated_at moves past it.
            conn.execute("UPDATE memories SET quarantined = true WHERE id = %s", [lost["id"]])
            assert "0045" in apply_migrations(dsn)
            assert retired(conn, active["id"]) is None and retired(conn, new["id"]) is None
            assert retired(conn, old["id"]) == truth[old["id"]] == db_created(conn, new["id"])
            assert retired(conn, gone["id"]) == truth[gone["id"]]
            assert retired(conn, unfed["id"]) == db_created(conn, heir["id"])
            updated = conn.execute("SELECT updated_at FROM memories WHERE id = %s",
                                   [lost["id"]]).fetchone()[0]
            assert retired(conn, lost["id"]) == updated > truth[lost["id"]]
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute("UPDATE memories SET retired_at = NULL, status = 'ACTIVE' "
                             "WHERE id = %s", [old["id"]])


def db_created(conn: psycopg.Connection, memory_id: str):
    return conn.execute("SELECT created_at FROM memories WHERE id = %s",
                        [memory_id]).fetchone()[0]


async def test_the_database_writes_retired_at_once_whatever_a_client_sends(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        mid = (await b.remember(DESKTOP, NS, content="a note"))["memory"]["id"]
        await b.forget(DESKTOP, NS, mid, "wrong")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        first = retired(conn, mid)
        assert first is not None
        conn.execute("UPDATE memories SET retired_at = now() + interval '1 day', "
                     "quarantined = true WHERE id = %s", [mid])
        assert retired(conn, mid) == first
        with conn.transaction(force_rollback=True):  # a memory without its revision
            born = conn.execute(
                "INSERT INTO memories (namespace, kind, content, content_hash, author_client,"
                " retired_at) VALUES (%s, 'NOTE', 'x', 'x', 'me', now()) RETURNING retired_at",
                [NS]).fetchone()
        assert born[0] is None
