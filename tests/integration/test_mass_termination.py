"""Every pooled connection terminated at once (a server restart, a failover, an operator's
pg_terminate_backend on all of them): the next calls get new connections at once.

psycopg_pool's own checkout check sleeps 1 s, 2 s, 4 s... after each connection that fails it,
so a pool full of dead connections made each call wait seconds and time out
(storage/postgres/core.py, PgCore.connection). The full slow fault (terminations every 2 s
under load) is tests/concurrency/test_backend_terminations.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import PoolTimeout

from memhub.storage.postgres import core as pg_core
from tests.support.memories import NS, open_backend

POOL = 5
KILL_ALL = (
    # The two-argument form waits (up to 10 s) until each backend has exited, so its
    # termination message is on the client's socket before the test goes on.
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    " AND backend_type = 'client backend'"
)


@pytest.fixture
async def full_pool(db_dsn, tmp_path):
    """A backend whose pool holds POOL idle connections, all open."""
    async with open_backend(db_dsn, tmp_path, pool_min_size=POOL, pool_max_size=POOL) as b:
        await b.pool.wait(timeout=30)
        yield b


async def test_a_call_after_every_pooled_connection_was_terminated_waits_for_no_backoff(
    full_pool, db_conn
):
    assert db_conn.execute(KILL_ALL).fetchone()[0] == POOL
    started = time.monotonic()
    assert await full_pool.authenticate("mh_no_such_token_0123456789") is None
    # One connect and a few failed checks; the pool's backoff alone would be >= 0.9 s.
    assert time.monotonic() - started < 0.5


async def test_the_health_ping_after_every_pooled_connection_was_terminated_succeeds(
    full_pool, db_conn
):
    assert db_conn.execute(KILL_ALL).fetchone()[0] == POOL
    await full_pool.ping()


@pytest.fixture
def unnoticed(monkeypatch) -> None:
    """Terminated backends that have not yet said so on their sockets, simulated: the quiet
    checkout check sees nothing."""
    async def sees_nothing(conn):
        return None

    monkeypatch.setattr(pg_core, "check_unless_quiet", sees_nothing)


async def test_a_retried_read_checks_its_connection_with_a_round_trip(
    full_pool, db_conn, unnoticed
):
    """The read dies on the first dead connection; its retry must not take the next dead one
    on trust."""
    assert db_conn.execute(KILL_ALL).fetchone()[0] == POOL

    async def read(conn):
        return await (await conn.execute("SELECT 42 AS answer")).fetchone()

    assert await full_pool._run(NS, read, retry_safe=True) == {"answer": 42}


async def test_the_health_ping_on_connections_that_died_unnoticed_succeeds(
    full_pool, db_conn, unnoticed
):
    assert db_conn.execute(KILL_ALL).fetchone()[0] == POOL
    await full_pool.ping()


class StallingProxy:
    """A TCP path to PostgreSQL that can go silently dead: after `stall()` the open connections
    stay open but nothing passes either way, and new connections are refused."""

    def __init__(self, dsn: str) -> None:
        info = conninfo_to_dict(dsn)
        self.dsn = dsn
        self.host = info.get("host") or "localhost"
        self.port = int(info.get("port") or 5432)
        self.stalled = False
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task] = set()

    async def _upstream(self):
        if self.host.startswith("/"):
            return await asyncio.open_unix_connection(f"{self.host}/.s.PGSQL.{self.port}")
        return await asyncio.open_connection(self.host, self.port)

    async def _handle(self, client_r, client_w) -> None:
        self._writers.append(client_w)
        if self.stalled:
            client_w.close()
            return
        up_r, up_w = await self._upstream()
        self._writers.append(up_w)

        async def pipe(reader, writer):
            while data := await reader.read(65536):
                if not self.stalled:
                    writer.write(data)
                    await writer.drain()

        pipes = {asyncio.create_task(pipe(client_r, up_w)),
                 asyncio.create_task(pipe(up_r, client_w))}
        self._tasks |= pipes
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        for task in pipes:
            task.cancel()
        for writer in (client_w, up_w):
            writer.close()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return make_conninfo(self.dsn, host="127.0.0.1", port=str(port), sslmode="disable")

    async def stop(self) -> None:
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for writer in self._writers:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        await self._server.wait_closed()


async def test_a_checkout_check_on_a_silently_dead_path_gives_up_at_the_timeout(
    db_dsn, tmp_path
):
    """The round trip of a verified checkout is bounded by the caller's timeout: on a network
    path that went silent it would otherwise wait for TCP to give up (minutes)."""
    proxy = StallingProxy(db_dsn)
    dsn = await proxy.start()
    try:
        async with open_backend(dsn, tmp_path, pool_min_size=1, pool_max_size=1) as backend:
            await backend.pool.wait(timeout=30)
            proxy.stalled = True
            started = time.monotonic()

            async def checkout() -> None:
                async with backend.connection(timeout=1.0, verify=True):
                    pass

            with pytest.raises(PoolTimeout):
                await asyncio.wait_for(checkout(), timeout=30)
            # 1 s of timeout, then psycopg's own 5 s wait for the query it tried to cancel.
            assert time.monotonic() - started < 10
    finally:
        await proxy.stop()
