"""The lexical leg is answered by its GIN index under row-level security (migration 0006).

Under RLS a query's own condition can only become an index condition if its function is
LEAKPROOF; `tsvector @@ tsquery` is not, out of the box, so without 0006 every keyword search
tested @@ on every row of the namespace (400 ms at 100k memories; docs/perf.md). This test
plans the exact statement the server runs, as memhub_app under a namespace scope, and requires
the (namespace, search_tsv) index in the plan. It also checks the leg's answer against a
brute-force reading of its rule on the same rows.
"""

from __future__ import annotations

import json
import math

import pytest
from psycopg.rows import dict_row

from storage.pg_search import (
    LEXICAL_CANDIDATES,
    LEXICAL_MIN_COVERAGE,
    LEXICAL_RERANK,
    search_gucs,
)
from storage.queries import q

NS, OTHER = "big-proj", "other-proj"
WORDS = ["ledger", "webhook", "redis", "kafka", "invoice", "tenant", "canary", "nightly"]


@pytest.fixture
def corpus(db_conn):
    # Rows straight into the table as the owner: 3,000 here and 3,000 in another namespace
    # (one transaction: each memory must mirror its revision by COMMIT).
    with db_conn.transaction():
        _insert(db_conn)
    db_conn.execute("ANALYZE memories")
    return db_conn


def _insert(db_conn) -> None:
    for ns in (NS, OTHER):
        db_conn.execute(
            """
            INSERT INTO memories (namespace, kind, title, content, tags, content_hash,
                                  author_client)
            SELECT %(ns)s, 'FACT', 'note ' || i,
                   (%(w)s::text[])[1 + i %% 8] || ' ' || (%(w)s::text[])[1 + (i / 8) %% 8] || ' '
                     || (%(w)s::text[])[1 + (i / 64) %% 8] || ' item ' || i,
                   '{}', decode(md5(%(ns)s || i), 'hex'), 'test'
              FROM generate_series(1, 3000) AS i
            """,
            {"ns": ns, "w": WORDS},
        )
    db_conn.execute(
        "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
        " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
        " FROM memories")


def _leg(conn, query: str, explain: bool = False):
    conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [NS])
    for name, value in search_gucs(100).items():  # as the server's search transactions do
        conn.execute("SELECT set_config(%s, %s, true)", [name, value])
    words = conn.execute(q("search.lexical_terms"),
                         {"query": query, "min_coverage": LEXICAL_MIN_COVERAGE}).fetchone()
    params = {"namespace": NS, "kinds": None, "tags": None, "depth": 50,
              "terms": words["terms"], "need": words["need"], "gate": words["gate"],
              "any_term": words["any_term"], "candidates": LEXICAL_CANDIDATES,
              "rerank": LEXICAL_RERANK}
    if explain:
        row = conn.execute("EXPLAIN (FORMAT JSON) " + q("search.lexical"), params).fetchone()
        return json.dumps(row["QUERY PLAN"]), words
    return conn.execute(q("search.lexical"), params).fetchall(), words


def test_the_lexical_leg_uses_its_gin_index_under_rls(corpus, db_dsn):
    import psycopg

    with psycopg.connect(db_dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        plan, _ = _leg(conn, "redis kafka canary", explain=True)
    scans = [node for node in _nodes(json.loads(plan)[0]["Plan"])
             if node.get("Index Name") == "memories_namespace_tsv"]
    # The words themselves must be the index condition, not a filter run on every row.
    assert any("@@" in node.get("Index Cond", "") for node in scans), plan


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def test_the_lexical_leg_returns_what_its_rule_says(corpus, db_dsn):
    import psycopg

    query = "redis kafka canary"
    with psycopg.connect(db_dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        rows, words = _leg(conn, query)
        conn.rollback()
    assert words["need"] == math.ceil(3 * LEXICAL_MIN_COVERAGE) == 2
    # Brute force over the same namespace, as the owner, in Python.
    contents = corpus.execute(
        "SELECT id, content FROM memories WHERE namespace = %s", [NS]).fetchall()
    matched = {r[0]: sum(w in r[1].split() for w in ("redis", "kafka", "canary"))
               for r in contents}
    best = max(matched.values())
    returned = [r["id"] for r in rows]
    assert returned, "the leg found nothing"
    assert len(returned) == 50
    assert all(matched[i] >= 2 for i in returned)          # the coverage floor
    assert matched[returned[0]] == best == 3                # best tier first
    counts = [r["matched"] for r in rows]
    assert counts == sorted(counts, reverse=True)
    other = {r[0] for r in corpus.execute(
        "SELECT id FROM memories WHERE namespace = %s", [OTHER]).fetchall()}
    assert not other & set(returned)                         # never another tenant's row
