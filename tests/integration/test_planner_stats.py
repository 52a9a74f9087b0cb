"""A namespace written after the last ANALYZE is read by id, not rescanned per row
(storage/postgres/retrieval/planner_stats.py, migration 0020).

The planner sizes a namespace from the last ANALYZE; one written since is estimated at one
row, and memory_context without a query then joined its vectors by rescanning the whole
namespace for each of its 300 memories (855,000 rows read for 3,000 memories, 644 ms). The
background loop now analyzes the namespace column when a namespace has doubled since memhub
last did. Autovacuum is switched off on the two tables here, so that only memhub's own ANALYZE
can correct the estimates (beside a large tenant autovacuum would wait for a tenth of the
table to change). Mutation checks: with `planner.follow` removed from
`lexicon.refresh_forever`, or with the doubling test in lexicon.planner_stats_due always
false, these tests fail (the plan reads 450,000 vector rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import psycopg

from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.queries import q
from memhub.storage.postgres.retrieval import lexicon
from memhub.storage.postgres.retrieval.context import CONTEXT_RECENT_DEPTH
from memhub.storage.postgres.retrieval.planner_stats import MIN_ROWS, PlannerStats
from memhub.storage.postgres.retrieval.search import search_gucs
from tests.conftest import make_settings
from tests.support.plans import explain_as_app, rows_read
from tests.support.retrieval import bulk_insert_memories

BIG, FRESH = "planner-big", "planner-fresh"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _vectors(conn: psycopg.Connection, namespace: str) -> None:
    """Random vectors for the namespace's memories that have none: which plan joins them is
    what matters here, not their meaning."""
    conn.execute(
        "INSERT INTO memory_embeddings (memory_id, namespace, revision, model, embedding)"
        " SELECT m.id, m.namespace, 1, %s,"
        " (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) g"
        "   WHERE m.seq > 0)::vector"
        " FROM memories m WHERE m.namespace = %s AND NOT EXISTS"
        " (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id)", [MODEL, namespace])


def _arrange(conn: psycopg.Connection, fresh: int) -> None:
    bulk_insert_memories(conn, BIG, 3000)
    _vectors(conn, BIG)
    conn.execute("ANALYZE memories")
    conn.execute("ANALYZE memory_embeddings")
    for table in ("memories", "memory_embeddings"):
        conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    bulk_insert_memories(conn, FRESH, fresh)
    _vectors(conn, FRESH)


def _recent_plan(dsn: str) -> dict:
    return explain_as_app(dsn, FRESH, q("search.context_recent"),
                          {"namespace": FRESH, "model": MODEL, "kinds": None,
                           "depth": CONTEXT_RECENT_DEPTH},
                          search_gucs(100))


async def test_the_background_loop_analyzes_a_namespace_that_grew_unseen(db_conn, db_dsn,
                                                                       tmp_path):
    """The loop the server runs (recount, then this check) fixes the plan within a period."""
    _arrange(db_conn, 1500)
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    loop = asyncio.create_task(lexicon.refresh_forever(backend, 0.05))
    try:
        for _ in range(150):
            row = db_conn.execute("SELECT analyzed_docs FROM lexicon_state WHERE namespace = %s",
                                  [FRESH]).fetchone()
            if row and row[0]:
                break
            await asyncio.sleep(0.1)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
        await backend.close()
    # Each of the namespace's rows read at most once (by id, or in one pass for a hash
    # join), where the misjudged plan read the namespace's vectors once per memory sent.
    plan = _recent_plan(db_dsn)
    assert rows_read(plan, "memory_embeddings") <= 1500, json.dumps(plan, indent=1)
    assert rows_read(plan, "memories") <= 1500, json.dumps(plan, indent=1)
    assert row and row[0] == 1500, row


async def test_it_analyzes_again_only_once_a_namespace_has_doubled(db_conn, db_dsn, tmp_path):
    _arrange(db_conn, 1000)
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    planner = PlannerStats(min_interval=0)
    try:
        await lexicon.refresh_due(backend)
        assert await planner.follow(backend) == [BIG, FRESH]  # never analyzed by memhub
        assert await planner.follow(backend) == []

        bulk_insert_memories(db_conn, FRESH, 900, first=1001)  # 1,900: less than twice 1,000
        _vectors(db_conn, FRESH)
        await lexicon.refresh_due(backend)
        assert await planner.follow(backend) == []

        # Twice as many memories, but their vectors not written yet (pending jobs): analyzed
        # for the memories, and again once the vectors have doubled too.
        bulk_insert_memories(db_conn, FRESH, 100, first=1901)
        db_conn.execute("INSERT INTO embedding_jobs (namespace, memory_id, revision)"
                        " SELECT namespace, id, 1 FROM memories m WHERE namespace = %s"
                        " AND NOT EXISTS (SELECT 1 FROM memory_embeddings e"
                        "                  WHERE e.memory_id = m.id)", [FRESH])
        await lexicon.refresh_due(backend)
        assert await planner.follow(backend) == [FRESH]
        state = db_conn.execute("SELECT analyzed_docs, analyzed_vectors FROM lexicon_state"
                                " WHERE namespace = %s", [FRESH]).fetchone()
        assert state == (2000, 1900)

        bulk_insert_memories(db_conn, FRESH, 1700, first=2001)
        _vectors(db_conn, FRESH)
        db_conn.execute("DELETE FROM embedding_jobs")  # embedded: 3,700 memories and vectors
        await lexicon.refresh_due(backend)
        assert await planner.follow(backend) == []  # 3,700 < 2 x 2,000 and < 2 x 1,900
        bulk_insert_memories(db_conn, FRESH, 200, first=3701)
        _vectors(db_conn, FRESH)
        await lexicon.refresh_due(backend)
        # 3,900 memories < 2 x 2,000, but 3,900 vectors >= 2 x 1,900: for the vectors.
        assert await planner.follow(backend) == [FRESH]
    finally:
        await backend.close()


async def test_small_namespaces_and_a_recent_analyze_are_left_alone(db_conn, db_dsn, tmp_path):
    bulk_insert_memories(db_conn, "tiny", MIN_ROWS - 1)
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    try:
        await lexicon.refresh_due(backend)
        assert await PlannerStats(min_interval=0).follow(backend) == []
        bulk_insert_memories(db_conn, "tiny", 1, first=MIN_ROWS)
        await lexicon.refresh_due(backend)
        planner = PlannerStats(min_interval=3600)
        assert await planner.follow(backend) == ["tiny"]
        bulk_insert_memories(db_conn, "tiny", 500, first=MIN_ROWS + 1)
        await lexicon.refresh_due(backend)
        assert await planner.follow(backend) == []  # within the interval
    finally:
        await backend.close()


def test_the_app_role_analyzes_through_the_function(db_dsn):
    """memhub_app may not ANALYZE the owner's tables (PostgreSQL skips them with a warning);
    the owner's function does, as the background loop calls it."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute("ANALYZE memories")
        assert _analyzed(conn) is None
        assert conn.execute(q("lexicon.analyze_namespaces")).fetchone()[0] is True
        assert _analyzed(conn) is not None


def _analyzed(conn: psycopg.Connection):
    conn.execute("SELECT pg_stat_force_next_flush()")
    return conn.execute("SELECT last_analyze FROM pg_stat_user_tables"
                        " WHERE relname = 'memories'").fetchone()[0]
