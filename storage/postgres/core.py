"""The contract every storage area relies on: `PgCore` holds the settings, the embedder (given
at construction), the pool, the one transaction helper (which narrows every transaction to
the bound caller's scope, storage/postgres/scope.py), retries and durability. Each area store
(`memories/`, `retrieval/`, `work/`, `operator/`) subclasses it, or the store of a lower area
whose methods it calls, so the type checker proves every attribute a store uses is declared.

Every transaction runs as role `memhub_app` and sets `memhub.namespaces` transaction-locally,
so row-level security confines it to the namespaces it was opened for even if a query forgets
its `WHERE namespace = ...`.

On a direct connection the role and the statement timeout are set once per connection (in
`configure`). Behind a transaction pooler (`pooled`, storage/postgres/database_url.py) a
connection's next transaction may run on another server session, and its session serves other
clients in between: so nothing is set on the session, the role and the timeout are set with the
scope in each transaction's first round trip (`set_config(..., true)`, as SET LOCAL), the one
statement run outside a transaction carries them in front of it (`fetchone_outside_tx`), and no
statement is prepared.
"""

from __future__ import annotations

import asyncio
import logging
import select
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ...config import Settings
from ...errors import MemhubError, Retryable, Unavailable, UnknownOutcome
from ..principal import NAMESPACE_RE
from .database_url import direct_dsn, transaction_pooled
from .errors import is_disconnect, translate
from .queries import q
from .rows import Conn
from .scope import ALL_NAMESPACES, narrow

if TYPE_CHECKING:
    from ...embedding.embedder import Embedder

logger = logging.getLogger(__name__)

T = TypeVar("T")
__all__ = ["ALL_NAMESPACES", "PgCore", "check_unless_quiet", "retry_once_if_disconnected"]
APP_ROLE = "memhub_app"
PING_TIMEOUT = 2.0  # per attempt: both stay within the 5 s a health probe usually allows
# What a direct connection's session carries, as the first statement of a pooled message.
_LOCAL_SETTINGS_FIRST = ("SELECT set_config('role', %(memhub_role)s, true),"
                         " set_config('statement_timeout', %(memhub_timeout)s, true);\n")


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


async def check_unless_quiet(conn: Conn) -> None:
    """The check at checkout (PgCore.connection): a round trip (psycopg_pool's
    `check_connection`) only when the idle connection's socket has something to read. A
    backend that was terminated or a server that went away says so on the socket (an error
    message, then EOF) before any request could notice, so a quiet socket means the
    connection is as it was left; the round trip it saves is on every request's critical path
    (two per search, ~0.2-0.5 ms each under load). A silently dead network path is caught by
    the query itself, which reads retry (PgCore._run). Connections already known closed go to
    the full check, which fails."""
    if not conn.closed:
        try:
            poller = select.poll()
            poller.register(conn.pgconn.socket, select.POLLIN | select.POLLPRI)
            if not poller.poll(0):
                return
        except (AttributeError, OSError, ValueError, psycopg.OperationalError):
            pass  # no poll() on this platform, or no usable socket: the full check decides
    await AsyncConnectionPool.check_connection(conn)


async def retry_once_if_disconnected(attempt: Callable[[bool], Awaitable[T]], *,
                                     retry_safe: bool) -> T:
    """`attempt(False)`, then `attempt(True)` if it failed on a lost connection and may be
    repeated (a read, or a write with an idempotency key). The argument is `verify`: whether
    the attempt's connection must pass a round trip at checkout (PgCore.connection).

    A connection can die unnoticed just before checkout: a backend terminated a moment ago has
    not yet said so on its socket, so check_unless_quiet lets it through. When one did, its
    neighbours in the pool most likely died with it (a server restart, a failover, every
    backend terminated at once) and may still be as quiet: so the second attempt's connection
    proves itself with a round trip first, and dead ones are replaced until one answers."""
    try:
        return await attempt(False)
    except (Retryable, UnknownOutcome) as err:
        if not (retry_safe and err.__cause__ is not None and is_disconnect(err.__cause__)):
            raise
        logger.warning("retrying after a lost connection", extra={"code": err.code})
    return await attempt(True)


class PgCore:
    """What every area store may use: `settings`, `embedder` (None without a model: searches
    are lexical), `pool`, `pooled` / `listen_dsn`, `_run` / `_tx` (the scoped transaction),
    `connection`, `durable_commits`, `_ready_embedder` and `_model_name`. Area stores keep no other
    shared state; one that needs its own builds it in `__init__` and passes the arguments on."""

    def __init__(self, settings: Settings, dsn: str, *, embedder: Embedder | None = None
                 ) -> None:
        self.settings = settings
        self.dsn = dsn
        self.embedder = embedder
        self._durable: bool | None = None
        self.pooled = transaction_pooled(settings.db_pooler, dsn)
        # Where LISTEN can work: a session of our own. Behind a pooler without a direct URL,
        # None: the embedding worker polls.
        self.listen_dsn = direct_dsn(settings) or (None if self.pooled else dsn)
        self._timeout = str(settings.statement_timeout_ms)
        # Set with every transaction's scope when the session is not ours to keep them on.
        self._local_settings: list[tuple[str, str]] = (
            [("role", APP_ROLE), ("statement_timeout", self._timeout)] if self.pooled else [])
        kwargs: dict[str, object] = {"autocommit": True, "row_factory": dict_row}
        if self.pooled:
            # A prepared statement lives on one server session; the next transaction's may not
            # have it (PgBouncer before 1.21 does not track them).
            kwargs["prepare_threshold"] = None
        self.pool = AsyncConnectionPool(
            dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            open=False,
            timeout=settings.db_connect_timeout,
            # No `check=`: PgCore.connection checks at checkout instead (see why there).
            configure=self._configure,
            kwargs=kwargs,
            name="memhub",
        )

    async def _configure(self, conn: Conn) -> None:
        await register_vector_async(conn)  # a catalog read: holds nothing on the session
        if self.pooled:
            return
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

    def _ready_embedder(self) -> Embedder | None:
        """The embedder when queries can be embedded now, else None (the semantic leg is then
        skipped: degraded)."""
        return self.embedder if self.embedder is not None and self.embedder.ready else None

    def _model_ready(self) -> bool:
        return self._ready_embedder() is not None

    def _model_name(self) -> str:
        """The model whose vectors are compared (a vector of another model never is)."""
        return self.embedder.model_name if self.embedder is not None else ""

    async def durable_commits(self) -> bool:
        """Whether an acknowledged COMMIT is on disk: synchronous_commit is not 'off'."""
        if self._durable is None:
            async def read(conn: Conn) -> bool:
                cur = await conn.execute(q("trust.synchronous_commit"), {})
                row = await cur.fetchone()
                return row is not None and row["setting"] != "off"

            self._durable = await self._run(ALL_NAMESPACES, read, retry_safe=True)
        return self._durable

    async def ping(self) -> None:
        """A round trip on a checked pooled connection, retried once on a lost connection like
        any read (then on a connection verified by a round trip at checkout): `/healthz` must
        not report an outage because it drew one connection that died a moment ago.

        Raises Unavailable (with the driver's reason) when no connection answers in time."""
        async def attempt(verify: bool) -> None:
            try:
                async with self.connection(timeout=PING_TIMEOUT, verify=verify) as conn:
                    await conn.execute("SELECT 1")
            except (psycopg.Error, PoolTimeout) as exc:
                raise translate(exc, committing=False) from exc

        try:
            await retry_once_if_disconnected(attempt, retry_safe=True)
        except Exception as exc:
            cause = exc.__cause__ if isinstance(exc, MemhubError) and exc.__cause__ else exc
            raise Unavailable(f"database unreachable: {type(cause).__name__}") from exc

    # --- checkout -------------------------------------------------------------------------
    @asynccontextmanager
    async def connection(
        self, *, timeout: float | None = None, verify: bool = False
    ) -> AsyncIterator[Conn]:
        """A pooled connection that passed the checkout check: check_unless_quiet, or with
        `verify` a round trip. Raises PoolTimeout when none did within `timeout` (default:
        the pool's, db_connect_timeout).

        This replaces psycopg_pool's own checkout check, which after each connection that
        fails it sleeps before trying the next (1 s, then 2 s, 4 s... until the request's
        timeout). When every backend is terminated at once, every idle connection is dead at
        once: a request met a dead connection per growing sleep and timed out (a 503 after
        db_connect_timeout, /healthz down for minutes under repeated terminations) while the
        database answered new connections all along. Here a connection that fails the check
        is given back to be replaced and the next one is tried at once. The loop cannot spin:
        each turn uses up a connection, and with none left it waits for a new one, which takes
        a successful connect."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.pool.timeout if timeout is None else timeout)
        while True:
            conn = await self.pool.getconn(timeout=deadline - loop.time())
            try:
                # Bounded too: a round trip on a silently dead network path would wait for TCP
                # to give up. (Cut off, psycopg tries to cancel the query, for up to 10 s more
                # if the cancel request gets no answer, and closes the connection.)
                async with asyncio.timeout_at(deadline):
                    if verify:
                        await AsyncConnectionPool.check_connection(conn)
                    else:
                        await check_unless_quiet(conn)
            except Exception:
                # Returned broken (closed, or cut off mid-check): the pool discards it and
                # opens its replacement in the background.
                await self.pool.putconn(conn)
                continue
            except BaseException:
                await self.pool.putconn(conn)
                raise
            break
        try:
            async with conn:
                yield conn
        finally:
            await self.pool.putconn(conn)

    # --- transactions ---------------------------------------------------------------------
    @asynccontextmanager
    async def _tx(
        self, namespaces: str | Sequence[str], gucs: Mapping[str, str] | None = None, *,
        verify: bool = False,
    ) -> AsyncIterator[Conn]:
        """One transaction confined (by RLS) to `namespaces` ('*' for operator-wide reads).
        `gucs`: more transaction-local settings, set in the same round trip as the scope.
        `verify`: the connection answers a round trip before the transaction (a retry's).

        Driver errors leave as memhub errors; a connection lost while COMMIT was in flight is
        UNKNOWN_OUTCOME, before that RETRYABLE.
        """
        # The one place a transaction's scope is decided: what was asked, narrowed to what the
        # request's token may see (storage/postgres/scope.py).
        namespaces, settings = narrow(namespaces, gucs)
        scope = scope_value(namespaces)
        committing = False
        try:
            async with self.connection(verify=verify) as conn:
                async with conn.transaction():
                    extra = [*self._local_settings, *settings.items()]
                    await conn.execute(
                        "SELECT set_config('memhub.namespaces', %s, true)"
                        + ", set_config(%s, %s, true)" * len(extra),
                        [scope, *(v for pair in extra for v in pair)],
                    )
                    yield conn
                    committing = True
        except (psycopg.Error, PoolTimeout) as exc:
            raise translate(exc, committing=committing) from exc

    async def fetchone_outside_tx(self, conn: Conn, query: str,
                                  params: Mapping[str, object]) -> dict | None:
        """The first row of `query` run on its own, outside any transaction, as APP_ROLE under
        the statement timeout, in one round trip.

        Direct, the session already carries both. Pooled, they are set in front of the query in
        one simple-protocol message (parameters bound client-side), which PostgreSQL runs as one
        implicit transaction: the settings end with it."""
        if not self.pooled:
            cur = await conn.execute(query, params)
            return await cur.fetchone()
        bound = {**params, "memhub_role": APP_ROLE, "memhub_timeout": self._timeout}
        async with psycopg.AsyncClientCursor(conn) as cur:
            await cur.execute(_LOCAL_SETTINGS_FIRST + query, bound)
            cur.nextset()  # past the settings' row, to the query's
            return await cur.fetchone()

    async def _run(
        self,
        namespaces: str | Sequence[str],
        fn: Callable[[Conn], Awaitable[T]],
        *,
        retry_safe: bool,
        gucs: Mapping[str, str] | None = None,
    ) -> T:
        """Run `fn` in a scoped transaction; retry once on a genuine disconnect if safe.

        `retry_safe` is true for reads and for writes that carry an idempotency key (a replay
        returns the stored answer). Nothing else is retried: a write without a key that hit
        a disconnect surfaces RETRYABLE or UNKNOWN_OUTCOME to the caller.
        """
        async def attempt(verify: bool) -> T:
            async with self._tx(namespaces, gucs, verify=verify) as conn:
                result = await fn(conn)
            return result

        return await retry_once_if_disconnected(attempt, retry_safe=retry_safe)
