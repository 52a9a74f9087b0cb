"""The pool's checkout check (storage/pg_core.check_unless_quiet), on real connections.

A quiet idle connection is handed out without a round trip; one whose backend was terminated
(or that has anything else waiting on its socket) gets psycopg_pool's full check, which
discards it if it is dead.
"""

from __future__ import annotations

import select
import time

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from storage.pg_core import check_unless_quiet


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
