"""Where a string still lives in a database: every column of every table in every schema the
app role uses (found in the catalog, so a table added later is searched too), the planner's
sampled statistics, and a full pg_dump of the database (schema, data and statistics)."""

from __future__ import annotations

import os
import subprocess

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from tests.integration.test_schema_snapshot import pg_dump_binary


def app_schemas(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT nspname FROM pg_namespace"
        " WHERE has_schema_privilege('memhub_app', oid, 'USAGE')"
        "   AND nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def columns(conn: psycopg.Connection) -> list[tuple[str, str, str, str]]:
    """(schema, table, column, type) of every column of every ordinary table the app's
    schemas hold, of every type (text, varchar, json/jsonb, tsvector, arrays, bytea...)."""
    return conn.execute(
        "SELECT n.nspname, c.relname, a.attname, t.typname"
        "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        "  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        "  JOIN pg_type t ON t.oid = a.atttypid"
        " WHERE n.nspname = ANY (%s) AND c.relkind IN ('r', 'p', 'm')"
        " ORDER BY 1, 2, 3", [app_schemas(conn)]).fetchall()


def columns_holding(dsn: str, needle: str) -> dict[str, int]:
    """{"schema.table.column": rows} whose value holds `needle` (case-insensitive; bytes as
    UTF-8). Read as the owner, a superuser here: row-level security does not hide rows."""
    found: dict[str, int] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema, table, column, type_name in columns(conn):
            if type_name == "bytea":
                test = sql.SQL("position(convert_to(%s, 'UTF8') IN {}) > 0").format(
                    sql.Identifier(column))
                arg = needle
            else:
                test = sql.SQL("strpos(lower({}::text), %s) > 0").format(sql.Identifier(column))
                arg = needle.lower()
            n = conn.execute(sql.SQL("SELECT count(*) FROM {}.{} WHERE {}").format(
                sql.Identifier(schema), sql.Identifier(table), test), [arg]).fetchone()[0]
            if n:
                found[f"{schema}.{table}.{column}"] = n
    return found


def statistics_holding(dsn: str, needle: str) -> list[str]:
    """The columns whose planner statistics (most common values, histogram bounds, most
    common elements) hold `needle`."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT starelid::regclass::text || '.' || a.attname FROM pg_statistic s"
            "  JOIN pg_attribute a ON a.attrelid = s.starelid AND a.attnum = s.staattnum"
            " WHERE strpos(lower(concat_ws(' ', s.stavalues1::text, s.stavalues2::text,"
            "        s.stavalues3::text, s.stavalues4::text, s.stavalues5::text)), %s) > 0",
            [needle.lower()]).fetchall()
    return sorted(r[0] for r in rows)


def dump(dsn: str) -> str:
    """pg_dump of the whole database: schema, data and the planner's statistics."""
    params = conninfo_to_dict(dsn)
    env = {**os.environ, "PGPASSWORD": str(params.get("password") or "")}
    command = [pg_dump_binary(), "--statistics", "--no-owner",
               "--host", str(params.get("host", "localhost")),
               "--port", str(params.get("port", 5432)),
               "--username", str(params.get("user", "postgres")),
               "--dbname", str(params["dbname"])]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout


def everywhere(dsn: str, needle: str) -> dict[str, object]:
    """Every place `needle` was found: columns, statistics, the dump. Empty: nowhere."""
    places: dict[str, object] = dict(columns_holding(dsn, needle))
    stats = statistics_holding(dsn, needle)
    if stats:
        places["pg_statistic"] = stats
    if needle.lower() in dump(dsn).lower():
        places["pg_dump"] = True
    return places
