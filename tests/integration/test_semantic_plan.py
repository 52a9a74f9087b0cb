"""The semantic leg's plan for a mid-sized namespace beside a large one (search.semantic_plan,
storage/postgres/retrieval/search.py `_plan_semantic`).

Under row-level security the planner counts a namespace twice (the statement's predicate and
the policy's), so it expects a namespace holding a fraction f of the table's vectors to hold
f^2 and scans a mid-sized one's vectors one by one instead of using the HNSW index (at 10,000
beside 100,000: 41-49 ms of SQL against 5 ms; docs/performance.md). These tests arrange that shape
with random vectors written as the owner, then check the plans of the exact statements as
memhub_app, and that a real search through the backend takes the index.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg.rows import dict_row

from memhub.storage.postgres.queries import q
from memhub.storage.postgres.retrieval.search import MIN_LEG_DEPTH, search_gucs
from tests.conftest import make_settings
from tests.support.plans import nodes
from tests.support.retrieval import WRITER, bulk_insert_memories, embedder, open_backend

__all__ = ["embedder"]

LARGE, MID, SMALL = "large-proj", "mid-proj", "small-proj"
SIZES = {LARGE: 6000, MID: 1200, SMALL: 40}
HNSW, BY_NAMESPACE = "memory_embeddings_hnsw", "memory_embeddings_ns"


@pytest.fixture(scope="module")
def world(module_dsn, embedder):
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        _arrange(conn, embedder.model_name)
    return module_dsn


def _arrange(conn, model: str) -> None:
    for ns, size in SIZES.items():  # every 100th memory of each tagged "rare"
        bulk_insert_memories(conn, ns, size, tags=lambda i: ["rare"] if i % 100 == 0 else [])
    _vectors(conn, model)
    for ns in SIZES:  # what storage/postgres/retrieval/lexicon.py does within seconds of the writes
        conn.execute("SELECT memhub_refresh_lexicon(%s)", [ns])
    conn.execute("ANALYZE memories")
    conn.execute("ANALYZE memory_embeddings")


def _vectors(conn, model: str, namespace: str | None = None) -> None:
    """Random unit-free vectors for the memories (of `namespace`, or all): which plan reads
    them is what matters here, not their meaning."""
    conn.execute(
        "INSERT INTO memory_embeddings (memory_id, namespace, revision, model, embedding)"
        " SELECT m.id, m.namespace, 1, %s,"
        " (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) g"
        "   WHERE m.seq > 0)::vector"
        " FROM memories m WHERE %s::text IS NULL OR m.namespace = %s", [model, namespace,
                                                                          namespace])


def _semantic_plan(dsn: str, namespace: str, *, planned: bool, depth: int = MIN_LEG_DEPTH):
    """(indexes the semantic statement's plan reads, enable_sort) as memhub_app in
    `namespace`'s scope, with search.semantic_plan run first when `planned`."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [namespace])
            for name, value in search_gucs(100).items():
                conn.execute("SELECT set_config(%s, %s, true)", [name, value])
            if planned:
                conn.execute(q("search.semantic_plan"), {"namespace": namespace,
                                                         "depth": depth, "filtered": False})
            vector = conn.execute("SELECT embedding FROM memory_embeddings LIMIT 1"
                                  ).fetchone()["embedding"]
            plan = conn.execute(
                "EXPLAIN (FORMAT JSON) " + q("search.semantic"),
                {"namespace": namespace, "kinds": None, "tags": None, "depth": depth,
                 "embedding": vector, "model": "sentence-transformers/all-MiniLM-L6-v2",
                 "question_penalty": 0.1}).fetchone()["QUERY PLAN"][0]["Plan"]
            sort = conn.execute("SELECT current_setting('enable_sort') AS s").fetchone()["s"]
    return {n["Index Name"] for n in nodes(plan) if "Index Name" in n}, sort


def test_the_planner_alone_scans_a_mid_sized_namespace_one_vector_at_a_time(world):
    """The problem itself: without search.semantic_plan the namespace's 1,200 vectors are read
    through the namespace index and sorted."""
    indexes, sort = _semantic_plan(world, MID, planned=False)
    assert BY_NAMESPACE in indexes and HNSW not in indexes
    assert sort == "on"


def test_a_mid_sized_namespace_takes_the_hnsw_index(world):
    indexes, sort = _semantic_plan(world, MID, planned=True)
    assert HNSW in indexes
    assert sort == "off"


def test_the_large_namespace_keeps_the_hnsw_index(world):
    assert HNSW in _semantic_plan(world, LARGE, planned=True)[0]


def test_a_small_namespace_and_a_deep_read_are_read_exactly(world):
    """40 vectors are cheaper read one by one than found by an index scan that must pass ~4,500
    other tenants' vectors to meet 30 of them, and exact: index scans are off for the read, so
    the HNSW index is not used whatever the planner estimates. At memory_context's depth (100)
    the mid-sized namespace is below the threshold too."""
    indexes, sort = _semantic_plan(world, SMALL, planned=True)
    assert HNSW not in indexes and sort == "on"
    indexes, sort = _semantic_plan(world, MID, planned=True, depth=100)
    assert HNSW not in indexes and sort == "on"


def test_a_small_namespace_beside_a_neighbour_grown_since_analyze_is_read_exactly(db_dsn,
                                                                                  embedder):
    """The table was last analyzed when the small namespace was all of it; a neighbour has
    grown since. Judged by that ANALYZE's count (200 vectors in a table of 200), the small
    namespace would take the HNSW index, which filters its vectors from the neighbour's and
    loses some of its true nearest; the table's size is read as it is now."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE memory_embeddings SET (autovacuum_enabled = false)")
        bulk_insert_memories(conn, SMALL, 200)
        _vectors(conn, embedder.model_name, SMALL)
        conn.execute("SELECT memhub_refresh_lexicon(%s)", [SMALL])
        conn.execute("ANALYZE memory_embeddings")
        bulk_insert_memories(conn, LARGE, SIZES[LARGE])
        _vectors(conn, embedder.model_name, LARGE)
    indexes, sort = _semantic_plan(db_dsn, SMALL, planned=True)
    assert HNSW not in indexes and sort == "on"


async def test_a_search_of_the_mid_sized_namespace_reads_the_hnsw_index(world, tmp_path,
                                                                         embedder):
    """Through the backend, as the server searches: the HNSW index is scanned, and what comes
    back is the mid-sized namespace's own memories, as many as asked for."""
    settings = make_settings(world, tmp_path)
    before = _index_scans(world)
    async with open_backend(settings, embedder) as backend:
        for mode in ("semantic", "hybrid"):
            found = (await backend.search(WRITER, MID, "ledger entry", limit=10,
                                          mode=mode))["results"]
            assert len(found) == 10
            assert {r["memory"]["namespace"] for r in found} == {MID}
    deadline = time.monotonic() + 30  # a backend reports its counters within seconds of idling
    while (scans := _index_scans(world))[HNSW] < before[HNSW] + 2 \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert scans[HNSW] >= before[HNSW] + 2
    # The namespace index is read only by the rule's count (search.semantic_plan), once a
    # search: the vectors are not read through it.
    assert scans[BY_NAMESPACE] == before[BY_NAMESPACE] + 2


async def test_a_filtered_search_is_left_to_the_planner(world, tmp_path, embedder):
    """A tag held by 12 of the namespace's 1,200 memories: its vectors are read through the
    tag's index and sorted; forcing the HNSW index would make the scan pass ~7,000 other
    vectors to find them."""
    settings = make_settings(world, tmp_path)
    before = _index_scans(world, table="memories")
    hnsw_before = _index_scans(world)[HNSW]
    async with open_backend(settings, embedder) as backend:
        found = (await backend.search(WRITER, MID, "ledger entry", limit=20, tags=["rare"],
                                      mode="semantic"))["results"]
    assert len(found) == 12 and all(r["memory"]["tags"] == ["rare"] for r in found)
    deadline = time.monotonic() + 30  # wait until the backend has reported its counters
    while _index_scans(world, table="memories") == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _index_scans(world, table="memories") != before
    assert _index_scans(world)[HNSW] == hnsw_before


def _index_scans(dsn: str, table: str = "memory_embeddings") -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET stats_fetch_consistency = none")
        return {name: n for name, n in conn.execute(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes"
            " WHERE relname = %s", [table]).fetchall()}
