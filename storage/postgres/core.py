"""PostgreSQL plumbing shared by every storage area: the pool, scoped transactions, retries,
health and the token gate.

Every transaction runs as role `memhub_app` (set once per connection in `configure`) and sets
`memhub.namespaces` transaction-locally, so row-level security confines it to the namespaces it
was opened for even if a query forgets its `WHERE namespace = ...`.
"""

from __future__ import annotations

import logging
import select
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TypeVar

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ...config import Settings
from ...errors import Retryable, Unavailable, UnknownOutcome
from ..principal import NAMESPACE_RE
from .errors import is_disconnect, translate

logger = logging.getLogger(__name__)

T = TypeVar("T")
ALL_NAMESPACES = "*"
APP_ROLE = "memhub_app"


def scope_value(namespaces: str | Sequence[str]) -> str:
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    names = list(namespaces)
    if names == [ALL_NAMESPACES]:
        return ALL_NAMESPACES
    for name in names:
        if not NAMESPACE_RE.fullmatch(name):
            raise ValueError(f"bad namespace in scope: {name!r}")
    return ",".join(names)


async def check_unless_quiet(conn: psycopg.AsyncConnection) -> None:
    """The pool's check at checkout: a round trip (psycopg_pool's `check_connection`) only
    when the idle connection's socket has something to read. A backend that was terminated
    or a server that went away says so on the socket (an error message, then EOF) before any
    request could notice, so a quiet socket means the connection is as it was left; the round
    trip it saves is on every request's critical path (two per search, ~0.2-0.5 ms each under
    load). A silently dead network path is caught by the query itself, which reads retry
    (PgCore._run). Connections already known closed go to the full check, which fails."""
    if not conn.closed:
        try:
            poller = select.poll()
            poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
            if not poller.poll(0):
                return
        except (AttributeError, OSError, ValueError, psycopg.OperationalError):
            pass  # no poll() on this platform, or no usable socket: the full check decides
    await AsyncConnectionPool.check_connection(conn)


async def retry_once_if_disconnected(attempt: Callable[[], Awaitable[T]], *,
                                     retry_safe: bool) -> T:
    """`attempt()`, once more if it failed on a lost connection and may be repeated (a read, or
    a write with an idempotency key). A connection can die unnoticed just before checkout: a
    backend terminated a moment ago has not yet said so on its socket, so check_unless_quiet
    lets it through; the second attempt gets the pool's check again, or a new connection."""
    try:
        return await attempt()
    except (Retryable, UnknownOutcome) as err:
        if not (retry_safe and err.__cause__ is not None and is_disconnect(err.__cause__)):
            raise
        logger.warning("retrying after a lost connection", extra={"code": err.code})
    return await attempt()


class PgCore:
    def __init__(self, settings: Settings, dsn: str) -> None:
        self.settings = settings
        self.dsn = dsn
        self.pool = AsyncConnectionPool(
            dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            open=False,
            timeout=settings.db_connect_timeout,
            check=check_unless_quiet,
            configure=self._configure,
            kwargs={"autocommit": True, "row_factory": dict_row},
            name="memhub",
        )

    async def _configure(self, conn: psycopg.AsyncConnection) -> None:
        await register_vector_async(conn)
        await conn.execute(f"SET ROLE {APP_ROLE}")
        await conn.execute(
            "SELECT set_config('statement_timeout', %s, false)",
            [str(self.settings.statement_timeout_ms)],
        )

    # --- lifecycle ------------------------------------------------------------------------
    async def open(self) -> None:
        # Do not wait for min_size: a database that is down at start-up must not stop the
        # process from serving /healthz (which then says why).
        await self.pool.open(wait=False)

    async def close(self) -> None:
        await self.pool.close()

    async def ping(self) -> None:
        try:
            async with self.pool.connection(timeout=2.0) as conn:
                await conn.execute("SELECT 1")
        except Exception as exc:
            raise Unavailable(f"database unreachable: {type(exc).__name__}") from exc

    # --- transactions ---------------------------------------------------------------------
    @asynccontextmanager
    async def _tx(
        self, namespaces: str | Sequence[str], gucs: Mapping[str, str] | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection]:
        """One transaction confined (by RLS) to `namespaces` ('*' for operator-wide reads).
        `gucs`: more transaction-local settings, set in the same round trip as the scope.

        Driver errors leave as memhub errors; a connection lost while COMMIT was in flight is
        UNKNOWN_OUTCOME, before that RETRYABLE.
        """
        scope = scope_value(namespaces)
        committing = False
        try:
            async with self.pool.connection() as conn:
                async with conn.transaction():
                    extra = list((gucs or {}).items())
                    await conn.execute(
                        "SELECT set_config('memhub.namespaces', %s, true)"
                        + ", set_config(%s, %s, true)" * len(extra),
                        [scope, *(v for pair in extra for v in pair)],
                    )
                    yield conn
                    committing = True
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, committing=committing) from exc

    async def _run(
        self,
        namespaces: str | Sequence[str],
        fn: Callable[[psycopg.AsyncConnection], Awaitable[T]],
        *,
        retry_safe: bool,
        gucs: Mapping[str, str] | None = None,
    ) -> T:
        """Run `fn` in a scoped transaction; retry once on a genuine disconnect if safe.

        `retry_safe` is true for reads and for writes that carry an idempotency key (a replay
        returns the stored answer). Nothing else is retried: a write without a key that hit
        a disconnect surfaces RETRYABLE or UNKNOWN_OUTCOME to the caller.
        """
        async def attempt() -> T:
            async with self._tx(namespaces, gucs) as conn:
                result = await fn(conn)
            return result

        return await retry_once_if_disconnected(attempt, retry_safe=retry_safe)
