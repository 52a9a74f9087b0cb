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


def _leg(conn, query: str, explain: bool = False, candidates: int = LEXICAL_CANDIDATES,
         depth: int = 50, min_coverage: float = LEXICAL_MIN_COVERAGE):
    conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [NS])
    for name, value in search_gucs(100).items():  # as the server's search transactions do
        conn.execute("SELECT set_config(%s, %s, true)", [name, value])
    words = conn.execute(q("search.lexical_terms"),
                         {"query": query, "min_coverage": min_coverage}).fetchone()
    params = {"namespace": NS, "kinds": None, "tags": None, "depth": depth,
              "terms": words["terms"], "need": words["need"], "gates": words["gates"],
              "below": words["below"], "any_term": words["any_term"],
              "candidates": candidates, "rerank": max(LEXICAL_RERANK, depth)}
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


def _matches(corpus, words: list[str]) -> dict:
    """Brute force over the namespace, as the owner, in Python: id -> query words it contains."""
    contents = corpus.execute(
        "SELECT id, content FROM memories WHERE namespace = %s", [NS]).fetchall()
    return {r[0]: sum(w in r[1].split() for w in words) for r in contents}


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
    matched = _matches(corpus, ["redis", "kafka", "canary"])
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


def test_a_small_candidate_cap_still_keeps_the_best_covered_memories(corpus, db_dsn):
    """Over a thousand rows match one of the words, 36 all three. With room for only 30
    candidates, all 30 must come from the every-word tier: the cap may cut inside a tier,
    never promote a one-word match over a three-word one (index order is by row, not merit)."""
    import psycopg

    matched = _matches(corpus, ["redis", "kafka", "canary"])
    full = {i for i, n in matched.items() if n == 3}
    assert len(full) > 30 and sum(n >= 1 for n in matched.values()) > 1000
    with psycopg.connect(db_dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        rows, _ = _leg(conn, "redis kafka canary", candidates=30, depth=30)
        conn.rollback()
    assert len(rows) == 30 and {r["id"] for r in rows} <= full


def test_a_long_query_keeps_the_coverage_rule(corpus, db_dsn):
    """Twelve words, at least three to match: the exact tiers stop where their gates grow too
    large (at least 9 of 12 would take 220 combinations) and the last gate is a superset (any
    two words), filtered on the exact count. The rule holds all the same."""
    import psycopg

    words = ["ledger", "webhook", "redis", "kafka", "invoice", "tenant", "canary", "nightly",
             "budget", "quarterly", "forecast", "region"]
    with psycopg.connect(db_dsn, row_factory=dict_row) as conn:
        conn.execute("SET ROLE memhub_app")
        rows, terms = _leg(conn, " ".join(words), depth=LEXICAL_CANDIDATES, min_coverage=0.25)
        conn.rollback()
    assert terms["need"] == 3
    assert terms["below"] == [13, 12, 11, 10]        # tiers 12, 11, 10, then the superset
    matched = _matches(corpus, words)
    expected = {i for i, n in matched.items() if n >= 3}
    assert len(expected) > LEXICAL_CANDIDATES
    # A full candidate set, every one of them at or above the floor.
    assert len(rows) == LEXICAL_CANDIDATES and {r["id"] for r in rows} <= expected


def test_coverage_gates_match_exactly_the_rows_they_promise(db_conn):
    """memhub_at_least(terms, k) against brute force on small tsvectors, every k."""
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    docs = [" ".join(w for j, w in enumerate(words) if mask >> j & 1) for mask in range(32)]
    for k in range(1, 6):
        got = db_conn.execute(
            """SELECT array_agg(d ORDER BY d) FROM unnest(%s::text[]) AS d
                WHERE to_tsvector('simple', d) @@ memhub_at_least(
                      ARRAY(SELECT to_tsquery('simple', w) FROM unnest(%s::text[]) AS w), %s)""",
            [docs, words, k]).fetchone()[0] or []
        want = sorted(d for d in docs if len(d.split()) >= k)
        assert got == want, k
