"""Apply `migrations/NNNN_name.sql` in order, each once, each in its own transaction.

Serialised by a transaction-level PostgreSQL advisory lock, taken by each migration's
transaction: two processes starting together cannot both apply the same file; the second waits,
then finds it recorded in `schema_migrations` and skips it. Nothing is held on the session (no
session lock, no prepared statement), so migrations run as well through a transaction pooler
(PgBouncer), where consecutive transactions may run on different server sessions, as on a
direct connection.

A migration that rewrites a table names it in a line `-- memhub: vacuum <table>`; the table is
vacuumed once the migration has committed (VACUUM cannot run inside a transaction). A rewrite
leaves the table's visibility map empty, and autovacuum only returns after enough new writes:
until then every index-only scan (the counts of `stats`) reads the heap as well.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

# migrations/ sits at the top of the memhub package (shipped in the wheel as package data).
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
_LOCK_KEY = 0x6D656D687562  # "memhub"
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_VACUUM = re.compile(r"^-- memhub: vacuum ([a-z_]+)\s*$", re.MULTILINE)


def migration_files(directory: Path = MIGRATIONS_DIR) -> list[tuple[str, str, Path]]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.match(path.name)
        if not match:
            raise ValueError(f"migration file name must be NNNN_name.sql: {path.name}")
        found.append((match.group(1), match.group(2), path))
    if not found:
        # A server that applied nothing would fail later, on every query, far from the cause.
        raise FileNotFoundError(f"no migrations found in {directory}")
    versions = [v for v, _, _ in found]
    if len(versions) != len(set(versions)):
        raise ValueError(f"two migrations share a number in {directory}")
    return found


def apply_migrations(dsn: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; return the versions applied by this call."""
    files = migration_files(directory)
    applied_now: list[str] = []
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version text PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, name, path in files:
            if version in done:
                continue
            text = path.read_text()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
                # Applied by another process while this one waited for the lock.
                if conn.execute("SELECT 1 FROM schema_migrations WHERE version = %s",
                                [version]).fetchone():
                    continue
                conn.execute(text)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    [version, name],
                )
            logger.info("migration applied", extra={"version": version, "migration": name})
            applied_now.append(version)
            for table in _VACUUM.findall(text):
                try:
                    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
                except psycopg.Error as exc:  # only speed is lost, until autovacuum
                    logger.warning("vacuum after migration failed",
                                   extra={"version": version, "table": table,
                                          "reason": type(exc).__name__})
    return applied_now
