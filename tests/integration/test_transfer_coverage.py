"""Nothing a tenant owns is left out of an export silently: every table with a `namespace`
column, and every column of it, is either written to the file or declared left out (with the
reason) in storage/postgres/operator/transfer.py. A migration that adds one fails here until the
export handles it or says why it need not."""

from __future__ import annotations

import json

import psycopg

from memhub.storage.postgres.operator.transfer import COLUMNS, IN_FILE, LEFT_OUT
from tests.support.transfer import export_to, populate

# The file's record for each table, and the key a table's columns sit under in it.
RECORDS = {
    "namespace_profiles": ("profile", None),
    "memories": ("memory", None),
    "memory_revisions": ("memory", "revisions"),
    "memory_corroborations": ("memory", "corroborations"),
    "memory_verifications": ("memory", "verifications"),
    "memory_claims": ("memory", "claim"),
    "handoffs": ("handoff", None),
    "sessions": ("session", None),
    "session_events": ("session_event", None),
    "artifacts": ("artifact", None),
}


def tenant_tables(dsn: str) -> dict[str, set[str]]:
    """{table: its columns} of every ordinary table with a `namespace` column."""
    with psycopg.connect(dsn) as conn:
        found = conn.execute(
            "SELECT c.relname, a.attname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
            " WHERE c.relkind IN ('r', 'p')"
            "   AND EXISTS (SELECT 1 FROM pg_attribute x WHERE x.attrelid = c.oid"
            "               AND x.attname = 'namespace' AND NOT x.attisdropped)").fetchall()
    tables: dict[str, set[str]] = {}
    for table, column in found:
        tables.setdefault(table, set()).add(column)
    return tables


def test_every_tenant_table_is_exported_or_declared_left_out(db_dsn):
    tables = tenant_tables(db_dsn)
    unhandled = sorted(set(tables) - set(COLUMNS) - set(LEFT_OUT))
    assert unhandled == [], f"tenant tables the export does not handle: {unhandled}"
    assert not set(COLUMNS) & set(LEFT_OUT)
    assert sorted(set(COLUMNS) | set(LEFT_OUT)) == sorted(tables), "declared tables gone"


def test_every_column_of_an_exported_table_is_in_the_file_or_declared_with_a_reason(db_dsn):
    tables = tenant_tables(db_dsn)
    for table, declared in COLUMNS.items():
        assert set(declared) == tables[table], table


async def test_every_column_declared_in_the_file_is_in_the_file(db_dsn, tmp_path):
    await populate(db_dsn, tmp_path)
    path = tmp_path / "acme.jsonl"
    await export_to(db_dsn, path)
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    keys: dict[tuple[str, str | None], set[str]] = {}
    for record in records:
        keys.setdefault((record["record"], None), set()).update(record)
        for nested in ("revisions", "corroborations", "verifications"):
            for item in record.get(nested, []) if record["record"] == "memory" else []:
                keys.setdefault(("memory", nested), set()).update(item)
        if record["record"] == "memory" and record["claim"] is not None:
            keys.setdefault(("memory", "claim"), set()).update(record["claim"])
    for table, declared in COLUMNS.items():
        written = {c for c, where in declared.items() if where == IN_FILE}
        assert written <= keys[RECORDS[table]], (table, written - keys[RECORDS[table]])
