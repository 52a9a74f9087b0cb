"""The lexical leg at scale (migration 0006, storage/lexical_leg.py).

Under RLS a query's own condition can only become an index condition if its function is
LEAKPROOF; `tsvector @@ tsquery` is not, out of the box, so without 0006 every keyword search
tested @@ on every row of the namespace (400 ms at 100k memories; docs/perf.md). These tests
plan the exact statement the server runs, as memhub_app under a namespace scope, and require
the (namespace, search_tsv) index in the plan; then they run the leg itself and check its answer
against a brute-force reading of its rule on the same rows, with room for every candidate and
with a cap far below the number that qualify.
"""

from __future__ import annotations

import asyncio
import json
import math

import psycopg
import pytest
from psycopg.rows import dict_row

from storage.lexical_leg import at_least, lexical_leg
from storage.pg_search import LEXICAL_CANDIDATES, LEXICAL_MIN_COVERAGE, search_gucs
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


def _scope(namespace: str = NS):
    return [("SELECT set_config('memhub.namespaces', %s, true)", [namespace])] + [
        ("SELECT set_config(%s, %s, true)", [name, value])       # as the server's search
        for name, value in search_gucs(100).items()]              # transactions do


def _leg(db_dsn: str, query: str, *, candidates: int = LEXICAL_CANDIDATES, depth: int = 50,
         min_coverage: float = LEXICAL_MIN_COVERAGE, rerank: int = 200,
         plans: list | None = None):
    """Run the leg as memhub_app, the way SearchStore does: (rows, need). With `plans`, the
    plan of every statement it runs, nested ones included (auto_explain), is appended there."""
    async def run():
        async with await psycopg.AsyncConnection.connect(db_dsn, row_factory=dict_row) as conn:
            if plans is not None:
                conn.add_notice_handler(lambda d: plans.append(d.message_primary))
                await conn.execute("LOAD 'auto_explain'")
                for name, value in AUTO_EXPLAIN.items():
                    await conn.execute("SELECT set_config(%s, %s, false)", [name, value])
            await conn.execute("SET ROLE memhub_app")
            async with conn.transaction():
                for sql, args in _scope():
                    await conn.execute(sql, args)
                rows = await lexical_leg(
                    conn, query, {"namespace": NS, "kinds": None, "tags": None, "depth": depth},
                    min_coverage=min_coverage, candidates=candidates, rerank=max(rerank, depth))
                cur = await conn.execute(q("search.lexical_terms"),
                                         {"query": query, "min_coverage": min_coverage})
                return rows, (await cur.fetchone())["need"]
    return asyncio.run(run())


AUTO_EXPLAIN = {"auto_explain.log_format": "json", "auto_explain.log_nested_statements": "on",
                "auto_explain.log_min_duration": "0", "auto_explain.log_level": "notice",
                "client_min_messages": "notice"}


def test_the_lexical_leg_uses_its_gin_index_under_rls(corpus, db_dsn):
    plans: list[str] = []
    rows, _ = _leg(db_dsn, "redis kafka canary", plans=plans)
    assert rows
    bodies = [text.split("plan:", 1)[1].strip() for text in plans if "plan:" in text]
    nodes = [node for body in bodies if body.startswith("{")
             for node in _nodes(json.loads(body)["Plan"])]
    # Every level reads memories through the index with the words as its condition; none
    # tests @@ as a filter on every row of the namespace.
    filtered = [n for n in nodes if n.get("Relation Name") == "memories"
                and "@@" in n.get("Filter", "")]
    assert not filtered, filtered
    indexed = [n for n in nodes if n.get("Index Name") == "memories_namespace_tsv"
               and "@@" in n.get("Index Cond", "")]
    assert indexed, plans


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
    rows, need = _leg(db_dsn, "redis kafka canary")
    assert need == math.ceil(3 * LEXICAL_MIN_COVERAGE) == 2
    matched = _matches(corpus, ["redis", "kafka", "canary"])
    best = max(matched.values())
    returned = [r["id"] for r in rows]
    assert len(returned) == 50
    assert all(matched[i] >= 2 for i in returned)          # the coverage floor
    assert matched[returned[0]] == best == 3                # best coverage first
    counts = [r["matched"] for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert counts == [matched[i] for i in returned]         # counted as brute force counts
    other = {r[0] for r in corpus.execute(
        "SELECT id FROM memories WHERE namespace = %s", [OTHER]).fetchall()}
    assert not other & set(returned)                         # never another tenant's row


def test_a_small_candidate_cap_still_keeps_the_best_covered_memories(corpus, db_dsn):
    """676 rows match at least two of the words, 36 all three. Asked for 30, or with room for
    only 30 candidates, all 30 must match all three words: a cut may fall inside a level, never
    promote a two-word match over a three-word one (index order is by row, not merit)."""
    matched = _matches(corpus, ["redis", "kafka", "canary"])
    full = {i for i, n in matched.items() if n == 3}
    assert len(full) > 30 and sum(n >= 2 for n in matched.values()) > 600
    for candidates, depth in ((1000, 30), (30, 30), (30, 100)):
        rows, _ = _leg(db_dsn, "redis kafka canary", candidates=candidates, depth=depth,
                       rerank=30)
        assert len(rows) == 30 and {r["id"] for r in rows} <= full, (candidates, depth)
    # Room for 100: all 36 full matches, then two-word ones.
    rows, _ = _leg(db_dsn, "redis kafka canary", candidates=100, depth=100)
    assert {r["id"] for r in rows[:36]} == full and len(rows) == 100
    assert all(matched[r["id"]] == 2 for r in rows[36:])


def test_a_long_query_keeps_the_coverage_rule(corpus, db_dsn):
    """Twelve words, at least three to match: "at least 3 of 12" would take 660 word tests per
    row, so the first gate is a superset (any two words) filtered on the exact count."""
    words = ["ledger", "webhook", "redis", "kafka", "invoice", "tenant", "canary", "nightly",
             "budget", "quarterly", "forecast", "region"]
    rows, need = _leg(db_dsn, " ".join(words), depth=LEXICAL_CANDIDATES,
                      min_coverage=0.25)
    assert need == 3
    matched = _matches(corpus, words)
    expected = {i for i, n in matched.items() if n >= 3}
    assert len(expected) > LEXICAL_CANDIDATES
    # A full candidate set, every one of them at or above the floor.
    assert len(rows) == LEXICAL_CANDIDATES and {r["id"] for r in rows} <= expected


def test_coverage_gates_match_exactly_the_rows_they_promise(db_conn):
    """at_least(terms, k), parsed and evaluated by PostgreSQL, against brute force: every
    subset of five words (some of them phrases, as identifiers are), every k."""
    words = ["alpha", "bravo", "charlie", "delta-echo", "foxtrot"]
    terms = [db_conn.execute("SELECT memhub_query_terms(%s)", [w]).fetchone()[0][0]
             for w in words]
    docs = [" ".join(w for j, w in enumerate(words) if mask >> j & 1) for mask in range(32)]
    for k in range(1, 6):
        got = db_conn.execute(
            """SELECT coalesce(array_agg(d ORDER BY d), '{}') FROM unnest(%s::text[]) AS d
                WHERE to_tsvector('simple', d) @@ %s::tsquery""",
            [docs, at_least(terms, k)]).fetchone()[0]
        want = sorted(d for d in docs if len(d.split()) >= k)
        assert got == want, k
