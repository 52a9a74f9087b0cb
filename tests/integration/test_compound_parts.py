"""A part of a path, a dotted name, a host or an e-mail address finds the memory that holds it
(migration 0018): PostgreSQL's parser keeps "storage/pg_search.py", "Node.js" or
"oncall@paystream.io" as one lexeme each, so before 0018 a query for "pg_search.py", "node" or
"paystream.io" found nothing lexically.

Mutation checks (docs/failure-modes.md): memhub_with_parts without the parts -> the 10 part
queries, the searches in the long texts and the empty-search-path test fail; the whole-token
and no-match tests pass. The parts computed by a helper called by name -> the
empty-search-path test fails."""

from __future__ import annotations

import pytest

from tests.support.retrieval import WRITER, open_backend

NS = "compound-parts"
MEMORIES = {
    "search": ("Hybrid search lives in storage/pg_search.py; its SQL is in "
               "storage/sql/search.sql."),
    "config": "The service reads /etc/memhub/config.toml at start, then the environment.",
    "node": "The dashboard is built with Node.js 22; the API client uses psycopg.pool.",
    "oncall": "Page oncall@paystream.io when the settlement job fails twice in a row.",
    "host": "Webhooks are delivered from hooks.eu.paystream.net on port 8443.",
    "plain": "Deploys go out on Tuesdays after the change review.",
}
PART_QUERIES = [
    ("pg_search.py", "search"),
    ("sql/search.sql", "search"),
    ("config.toml", "config"),
    ("memhub/config.toml", "config"),
    ("node", "node"),
    ("psycopg", "node"),
    ("paystream.io", "oncall"),
    ("oncall", "oncall"),
    ("eu.paystream.net", "host"),
    ("paystream.net", "host"),
]
WHOLE_QUERIES = [
    ("storage/pg_search.py", "search"),
    ("/etc/memhub/config.toml", "config"),
    ("Node.js", "node"),
    ("oncall@paystream.io", "oncall"),
    ("hooks.eu.paystream.net", "host"),
]


@pytest.fixture
async def backend(settings):
    async with open_backend(settings, None) as backend:
        ids = {}
        for name, content in MEMORIES.items():
            made = await backend.remember(WRITER, NS, kind="FACT", content=content)
            ids[made["memory"]["id"]] = name
        backend.test_names = ids
        yield backend


async def _top(backend, query: str) -> list[str]:
    found = await backend.search(WRITER, NS, query, mode="lexical")
    return [backend.test_names[r["memory"]["id"]] for r in found["results"]]


@pytest.mark.parametrize(("query", "want"), PART_QUERIES)
async def test_a_part_of_a_compound_token_finds_its_memory(backend, query, want):
    assert (await _top(backend, query))[:1] == [want]


@pytest.mark.parametrize(("query", "want"), WHOLE_QUERIES)
async def test_the_whole_token_still_finds_its_memory(backend, query, want):
    assert (await _top(backend, query))[:1] == [want]


async def test_a_part_no_memory_holds_finds_nothing(backend):
    # "paystream.org" shares words with two memories but is no part of either.
    assert await _top(backend, "paystream.org") == []
    assert await _top(backend, "memhub/search.sql") == []  # not a tail of that path


async def test_a_text_full_of_compound_tokens_is_written_and_searchable(settings):
    # 20,000 characters of dotted names and deep paths: the parts are bounded (1,000 distinct
    # tokens per text, tails of paths up to 16 segments, runs of dotted names up to 6 labels).
    dotted = " ".join(f"mod{i}.sub.pkg.core.util.base" for i in range(700))[:20000]
    deep = " ".join(f"/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/file{i}.txt" for i in range(600))[:20000]
    async with open_backend(settings, None) as backend:
        one = await backend.remember(WRITER, NS, content=dotted)
        two = await backend.remember(WRITER, NS, content=deep)
        found_one = await backend.search(WRITER, NS, "mod7.sub", mode="lexical")
        found_two = await backend.search(WRITER, NS, "file9.txt", mode="lexical")
    assert [r["memory"]["id"] for r in found_one["results"]] == [one["memory"]["id"]]
    assert [r["memory"]["id"] for r in found_two["results"]] == [two["memory"]["id"]]


def test_the_parts_are_computed_under_an_empty_search_path(db_conn):
    # pg_restore recomputes generated columns with search_path = '': memhub_with_parts must not
    # call another memhub function by name (it would not be found there).
    schema = db_conn.execute("SELECT pronamespace::regnamespace::text FROM pg_proc"
                             " WHERE proname = 'memhub_with_parts'").fetchone()[0]
    db_conn.execute("SET search_path = ''")
    try:
        text = db_conn.execute(f"SELECT {schema}.memhub_with_parts(%s)",
                               ["Hybrid search lives in storage/pg_search.py."]).fetchone()[0]
    finally:
        db_conn.execute("RESET search_path")
    assert text.startswith("Hybrid search lives in storage/pg_search.py.\n")
    assert "pg_search.py" in text.split("\n", 1)[1].split()
