"""The pool's checkout check (storage/postgres/core.check_unless_quiet), on real connections.

A quiet idle connection is handed out without a round trip; one whose backend was terminated
(or that has anything else waiting on its socket) gets a full round trip, and a dead one is
discarded (storage/postgres/core.PgCore.connection).
"""

from __future__ import annotations

import select
import time

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from memhub.storage.postgres.core import check_unless_quiet


@pytest.fixture
def full_checks(monkeypatch) -> list:
    """Records every full (round-trip) check, then runs it."""
    calls: list = []
    real = AsyncConnectionPool.check_connection

    async def counted(conn):
        calls.append(conn)
        await real(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
    return calls


def _wait_readable(conn: psycopg.AsyncConnection, timeout: float = 10.0) -> None:
    poller = select.poll()
    poller.register(conn.pgconn.socket, select.POLLIN)
    assert poller.poll(int(timeout * 1000)), "nothing arrived on the socket"


async def test_a_quiet_connection_is_handed_out_without_a_round_trip(db_dsn, full_checks):
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as conn:
        await conn.execute("SELECT 1")
        await check_unless_quiet(conn)
        assert full_checks == []
        assert (await (await conn.execute("SELECT 2")).fetchone()) == (2,)


async def test_a_terminated_backend_fails_the_check(db_dsn, db_conn, full_checks):
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as conn:
        pid = conn.info.backend_pid
        db_conn.execute("SELECT pg_terminate_backend(%s)", [pid])
        _wait_readable(conn)
        with pytest.raises(psycopg.OperationalError):
            await check_unless_quiet(conn)
        assert full_checks == [conn]


async def test_anything_waiting_on_the_socket_gets_the_full_check(db_dsn, db_conn, full_checks):
    async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as conn:
        await conn.execute("LISTEN memhub_pool_check")
        db_conn.execute("NOTIFY memhub_pool_check")
        _wait_readable(conn)
        await check_unless_quiet(conn)  # alive: the full check passes
        assert full_checks == [conn]


async def test_a_closed_connection_gets_the_full_check(db_dsn, full_checks):
    conn = await psycopg.AsyncConnection.connect(db_dsn, autocommit=True)
    await conn.close()
    started = time.monotonic()
    with pytest.raises(psycopg.OperationalError):
        await check_unless_quiet(conn)
    assert full_checks == [conn] and time.monotonic() - started < 5


async def test_a_token_check_on_a_connection_that_died_unnoticed_is_retried(
    db_dsn, db_conn, tmp_path, monkeypatch
):
    """The check cannot see a backend terminated a moment before checkout (it has not written
    to its socket yet). Simulated by a check that sees nothing: the token lookup, the first
    query of every request, meets the dead connection and is retried on a new one, as the
    tools' reads are (seen once in CI: `test_reconnect`'s kill-every-idle-connection test got
    an error from the token check)."""
    from memhub.storage.postgres import core as pg_core
    from memhub.storage.postgres.backend import PostgresBackend
    from tests.conftest import make_settings

    async def sees_nothing(conn):
        return None

    monkeypatch.setattr(pg_core, "check_unless_quiet", sees_nothing)
    core = PostgresBackend(make_settings(db_dsn, tmp_path, pool_min_size=1, pool_max_size=1),
                           db_dsn)
    await core.open()
    try:
        assert await core.authenticate("mh_no_such_token_0123456789") is None
        killed = db_conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'").fetchone()[0]
        assert killed == 1
        assert await core.authenticate("mh_no_such_token_0123456789") is None
    finally:
        await core.close()
