"""Reading PostgreSQL plans in tests: the plans of statements as the server runs them (role
memhub_app, row-level security, the namespace scope), and how many rows they read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg.rows import dict_row


def nodes(plan: dict) -> Iterator[dict]:
    """Every node of a JSON plan, the plan's own first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def rows_read(plan: dict, relation: str = "memories") -> int:
    """Rows the plan's scans of `relation` read: those they returned and those their filters
    dropped, over every loop (EXPLAIN gives both per loop: a scan inside a nested loop runs
    once per outer row)."""
    return round(sum((n["Actual Rows"] + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"]
                     for n in nodes(plan) if n.get("Relation Name") == relation))


def explain_as_app(dsn: str, namespace: str, sql: str, params: dict[str, Any],
                   gucs: dict[str, str] | None = None) -> dict:
    """The executed plan (EXPLAIN ANALYZE, JSON) of `sql` as memhub_app in `namespace`'s
    scope, with `gucs` set for the transaction as the server's reads set theirs."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [namespace])
            for name, value in (gucs or {}).items():
                conn.execute("SELECT set_config(%s, %s, true)", [name, value])
            return conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql,
                                params).fetchone()["QUERY PLAN"][0]["Plan"]
