"""`stats` for a token scoped to its own namespaces reads only their memories.

Row-level security keeps another tenant's counts out of the answer either way; this is about
the work: without the statement's own namespace condition (stats.memory_counts_in) the policy's
test, which is not an index condition, made every call read the whole table, so a small
tenant's `stats` cost grew with every other tenant's memories (43 ms for 1,000 beside 143,000;
docs/performance.md). The same held for the namespaces-due-for-a-recount list in `stats`, a loose
walk of the namespace index that read every entry sorting before the caller's. Mutation
checks: a scoped principal's counts sent to stats.memory_counts, or its due list to
lexicon.namespaces, again fail the backend test (3,000 entries read per call)."""

from __future__ import annotations

import asyncio
import json
import time

import psycopg
from psycopg.rows import dict_row

from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.queries import q
from memhub.storage.principal import Principal
from tests.conftest import make_settings
from tests.support.plans import explain_as_app, rows_read
from tests.support.retrieval import bulk_insert_memories

MINE, LARGE = "stats-small", "stats-large"
CALLS = 10


def test_a_scoped_count_reads_only_the_scoped_namespaces_rows(db_conn, db_dsn):
    bulk_insert_memories(db_conn, LARGE, 3000)
    bulk_insert_memories(db_conn, MINE, 20)
    db_conn.execute("VACUUM ANALYZE memories")
    plan = explain_as_app(db_dsn, MINE, q("stats.memory_counts_in"), {"namespaces": [MINE]})
    assert rows_read(plan) == 20, json.dumps(plan, indent=1)


async def test_stats_of_a_scoped_token_counts_only_its_namespaces_rows(db_conn, db_dsn,
                                                                      tmp_path):
    """Through the backend: the right counts, and the rows PostgreSQL read for them (its
    per-table counters, reported within seconds of the call) are not the other tenant's."""
    bulk_insert_memories(db_conn, LARGE, 3000)
    bulk_insert_memories(db_conn, MINE, 20)
    db_conn.execute("VACUUM ANALYZE memories")
    db_conn.execute("SELECT pg_stat_force_next_flush()")  # the arranging's reads counted now
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    before = _reads(db_dsn)
    try:
        for _ in range(CALLS):
            scoped = await backend.stats(Principal(token_id=1, surface="web",
                                                   namespaces=(MINE,)))
        deadline = time.monotonic() + 30
        while (after := _reads(db_dsn))["idx_scan"] == before["idx_scan"] \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        everyone = await backend.stats(Principal(token_id=0, surface="cursor", namespaces=None))
    finally:
        await backend.close()
    assert scoped["namespaces"] == {MINE: {"ACTIVE": 20}}
    assert everyone["namespaces"] == {MINE: {"ACTIVE": 20}, LARGE: {"ACTIVE": 3000}}
    assert after["idx_scan"] > before["idx_scan"]
    # A call reads ~40 rows and index entries (its 20 memories counted, the namespace probed,
    # the lexicon state); one walking the other tenant's 3,000 would read over 3,000.
    assert after["rows_read"] - before["rows_read"] < CALLS * 300


def _reads(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SET stats_fetch_consistency = none")
        # Rows read by sequential scans plus index entries read by every index's scans.
        return conn.execute(
            "SELECT coalesce(t.seq_tup_read, 0) + coalesce(sum(i.idx_tup_read), 0) AS rows_read,"
            "       coalesce(t.idx_scan, 0) AS idx_scan"
            "  FROM pg_stat_user_tables t"
            "  LEFT JOIN pg_stat_user_indexes i ON i.relid = t.relid"
            " WHERE t.relname = 'memories' GROUP BY t.seq_tup_read, t.idx_scan").fetchone()
