"""memory_context at scale: without a query it ranks the namespace's newest live memories,
and it must read only those (migration 0014), not sort the whole namespace on every call
(177 ms at 100k memories before the index; docs/performance.md)."""

from __future__ import annotations

import json

import pytest

from memhub.storage.context_pack import count_tokens, dumps
from memhub.storage.postgres.queries import q
from memhub.storage.postgres.retrieval.context import CONTEXT_RECENT_DEPTH
from memhub.storage.postgres.retrieval.search import search_gucs
from memhub.storage.principal import Principal
from tests.support.plans import explain_as_app, nodes, rows_read
from tests.support.retrieval import WRITER, bulk_insert_memories, drain, embedder, open_backend

__all__ = ["embedder"]

NS, OTHER = "ctx-big", "ctx-other"


@pytest.mark.parametrize("kinds", [None, ["DECISION"]])
def test_context_without_a_query_reads_only_the_newest_memories(db_conn, db_dsn, kinds):
    bulk_insert_memories(db_conn, NS, 6000)
    bulk_insert_memories(db_conn, OTHER, 3000)
    db_conn.execute("ANALYZE memories")
    plan = explain_as_app(db_dsn, NS, q("search.context_recent"),   # as the server reads
                          {"namespace": NS, "kinds": kinds, "depth": CONTEXT_RECENT_DEPTH,
                           "model": "m"},
                          search_gucs(100))
    assert not [n for n in nodes(plan) if n["Node Type"] in ("Sort", "Incremental Sort")], \
        json.dumps(plan, indent=1)
    # Every third memory is a DECISION: reading 900 for 300 of them is the index's order at
    # work; without it the namespace's 6,000 are read and sorted.
    assert rows_read(plan) <= 3 * CONTEXT_RECENT_DEPTH, json.dumps(plan, indent=1)


async def test_context_without_a_query_serves_the_most_recently_written_first(settings, db_conn):
    bulk_insert_memories(db_conn, NS, 500)
    db_conn.execute("ANALYZE memories")
    reader = Principal(token_id=0, surface="web", namespaces=None)
    async with open_backend(settings, None) as backend:
        newest = await backend.remember(reader, NS, content="Deploys go out on Tuesdays.")
        packed = await backend.context(reader, NS, budget_tokens=200)
    assert packed["memories"][0]["id"] == newest["memory"]["id"]


async def test_context_leaves_out_a_paraphrase_by_its_stored_vector(settings, embedder):
    """Near-duplicates are judged by the memories' vectors as read from the database; the
    paraphrase below shares almost no words with its original, so the word-overlap fallback
    alone would pack it instead of the distinct memory."""
    async with open_backend(settings, embedder) as backend:
        distinct = await backend.remember(WRITER, NS, kind="FACT", content=(
            "Invoices are numbered per organisation and the counter resets each January."))
        paraphrase = await backend.remember(WRITER, NS, kind="FACT", content=(
            "Every night at two o'clock a snapshot of our DB gets uploaded to the S3 bucket."))
        original = await backend.remember(WRITER, NS, kind="FACT", content=(
            "The nightly backup job copies the database to object storage at 2am."))
        await drain(backend, embedder)
        items = {m["id"]: m for m in (await backend.context(WRITER, NS))["memories"]}
        ids = [r["memory"]["id"] for r in (original, paraphrase, distinct)]
        tokens = [count_tokens(dumps(items[i])) + 1 for i in ids]
        # Room for the newest and one more, never for all three.
        budget = 2 + tokens[0] + max(tokens[1:])
        assert budget < 2 + sum(tokens)
        packed = await backend.context(WRITER, NS, budget_tokens=budget)
    assert [m["id"] for m in packed["memories"]] == [ids[0], ids[2]]
