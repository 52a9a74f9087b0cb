"""Failure classification at the storage boundary, with real connection losses.

RETRYABLE means nothing was committed; UNKNOWN_OUTCOME means the connection died while COMMIT
was in flight, and the caller must replay its client_request_id or re-read, never assume
failure. Two ways to lose a COMMIT are staged here:
- the backend is terminated (pg_terminate_backend) while a deferred trigger holds COMMIT
  open: the transaction did NOT commit;
- a proxy forwards COMMIT, lets the server finish it, and cuts the line before the answer:
  the transaction DID commit.
A replay of the same key must be right in both worlds: one memory, never zero or two.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from memhub.errors import Retryable, UnknownOutcome
from tests.support.cutting_proxy import CuttingProxy
from tests.support.memories import DESKTOP, NS, open_backend

SLOW_COMMIT = """
CREATE TABLE test_commit_gate (kills_left integer NOT NULL);
INSERT INTO test_commit_gate VALUES (0);
CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT kills_left FROM test_commit_gate) > 0 THEN
        PERFORM pg_sleep(10);
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER test_slow_commit AFTER INSERT ON memories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_slow_commit();
"""


def count_memories(conn) -> int:
    return conn.execute("SELECT count(*) FROM memories").fetchone()[0]


@pytest.fixture
def slow_commit(db_conn):
    db_conn.execute(SLOW_COMMIT)
    return db_conn


async def killer(dsn: str, kills: int) -> list[int]:
    """Terminate `kills` backends, each while it sleeps inside COMMIT (bounded wait)."""
    killed: list[int] = []
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for _ in range(kills):
            for _ in range(400):  # 20 s bound
                row = await (await conn.execute(
                    "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database()"
                    " AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
                    # A terminated backend lingers in the view for a moment: skip it.
                    " AND pid <> ALL(%s)", [killed])).fetchone()
                if row is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                raise TimeoutError("no backend ever sat in COMMIT")
            assert row[1].strip().upper() == "COMMIT"
            await conn.execute("UPDATE test_commit_gate SET kills_left = kills_left - 1")
            await conn.execute("SELECT pg_terminate_backend(%s)", [row[0]])
            killed.append(row[0])
    return killed


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        yield b


async def test_a_backend_killed_during_commit_is_unknown_outcome_not_failure(
    backend, slow_commit, db_dsn
):
    slow_commit.execute("UPDATE test_commit_gate SET kills_left = 1")
    kill = asyncio.create_task(killer(db_dsn, 1))
    with pytest.raises(UnknownOutcome) as err:
        await backend.remember(DESKTOP, NS, content="keyless write")
    assert len(await kill) == 1
    assert err.value.code == "UNKNOWN_OUTCOME"
    # Re-reading is how a keyless caller learns the truth: here the COMMIT never finished.
    assert count_memories(slow_commit) == 0


async def test_a_keyed_write_killed_twice_during_commit_replays_to_exactly_one_memory(
    backend, slow_commit, db_dsn
):
    slow_commit.execute("UPDATE test_commit_gate SET kills_left = 2")
    kill = asyncio.create_task(killer(db_dsn, 2))
    with pytest.raises(UnknownOutcome):
        # Keyed, so the storage layer retried once on its own; both attempts were cut.
        await backend.remember(DESKTOP, NS, content="keyed write", client_request_id="k-1")
    assert len(await kill) == 2
    replay = await backend.remember(DESKTOP, NS, content="keyed write",
                                    client_request_id="k-1")
    assert replay["outcome"] == "created"
    again = await backend.remember(DESKTOP, NS, content="keyed write", client_request_id="k-1")
    assert again["outcome"] == "replayed"
    assert again["memory"]["id"] == replay["memory"]["id"]
    assert count_memories(slow_commit) == 1


async def test_a_keyed_write_killed_once_during_commit_is_retried_transparently(
    backend, slow_commit, db_dsn
):
    slow_commit.execute("UPDATE test_commit_gate SET kills_left = 1")
    kill = asyncio.create_task(killer(db_dsn, 1))
    out = await backend.remember(DESKTOP, NS, content="keyed", client_request_id="k-2")
    assert len(await kill) == 1
    assert out["outcome"] == "created"
    assert count_memories(slow_commit) == 1


@pytest.fixture
async def proxied(db_dsn, tmp_path):
    proxy = CuttingProxy(db_dsn)
    dsn = await proxy.start()
    async with open_backend(dsn, tmp_path) as b:
        # Connection set-up commits too (type registration): arm only once the pool is full.
        await b.pool.wait(timeout=30)
        yield proxy, b
    await proxy.stop()


async def test_a_commit_whose_answer_is_lost_is_unknown_outcome_and_did_happen(
    proxied, db_conn
):
    proxy, backend = proxied
    proxy.cuts_left = 1
    with pytest.raises(UnknownOutcome):
        await backend.remember(DESKTOP, NS, content="acknowledgement lost")
    assert proxy.cuts_done == 1
    # Claiming failure here would have been a lie: the write is there.
    assert count_memories(db_conn) == 1


async def test_a_keyed_commit_whose_answer_is_lost_is_replayed_not_duplicated(
    proxied, db_conn
):
    proxy, backend = proxied
    proxy.cuts_left = 1
    out = await backend.remember(DESKTOP, NS, content="acknowledgement lost",
                                 client_request_id="k-3")
    assert proxy.cuts_done == 1
    # The automatic retry found the committed claim and returned the stored answer.
    assert out["outcome"] == "replayed" and out["original_outcome"] == "created"
    assert count_memories(db_conn) == 1


async def test_a_keyed_revise_whose_answer_is_lost_is_replayed_not_applied_twice(
    proxied, db_conn
):
    proxy, backend = proxied
    memory = (await backend.remember(DESKTOP, NS, content="v1"))["memory"]
    proxy.cuts_left = 1
    out = await backend.revise(DESKTOP, NS, memory["id"], 1, content="v2",
                               client_request_id="k-4")
    assert out["outcome"] == "replayed" and out["original_outcome"] == "revised"
    assert db_conn.execute("SELECT current_revision FROM memories").fetchone()[0] == 2


async def test_a_lost_connection_before_commit_is_retryable(backend, db_dsn):
    async def kill_mid_transaction(conn):
        pid = (await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone())["pid"]
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as other:
            await other.execute("SELECT pg_terminate_backend(%s)", [pid])
        await conn.execute("SELECT 1")

    with pytest.raises(Retryable):
        await backend._run(NS, kill_mid_transaction, retry_safe=False)
