"""The word statistics behind BM25 (0007, storage/postgres/retrieval/lexicon.py): which namespaces
are due for a recount, what a recount stores, that it counts only live memories of its own
namespace, and that the server's background job keeps them current on its own."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from memhub.storage.postgres.retrieval import lexicon
from memhub.storage.principal import Principal
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.plans import nodes
from tests.support.retrieval import WRITER, bulk_insert_memories, open_backend, owner_execute
from tests.support.server import thread_server

A, B = "lex-a", "lex-b"


def words(dsn: str, namespace: str) -> dict[str, int]:
    return dict(owner_execute(
        dsn, "SELECT lexeme, ndoc FROM lexicon_words WHERE namespace = %s", [namespace]))


async def test_a_recount_stores_live_word_frequencies_of_its_namespace_only(settings, db_dsn):
    async with open_backend(settings, None) as backend:
        for content in ("Ledger amounts are integers.", "The ledger is append-only.",
                        "Webhooks are signed."):
            await backend.remember(WRITER, A, content=content)
        gone = await backend.remember(WRITER, A, content="The ledger lives in Redis.")
        await backend.remember(WRITER, B, content="Ledger ledger ledger, Redis everywhere.")
        await backend.forget(WRITER, A, gone["memory"]["id"], reason="wrong")
        assert [r["namespace"] for r in await lexicon.due(backend)] == [A, B]  # never counted
        assert await lexicon.refresh_due(backend) == {A: 3, B: 1}
        assert await lexicon.due(backend) == []
    counted = words(db_dsn, A)
    assert counted["ledger"] == 2                  # in two live memories; the forgotten one
    assert "redi" not in counted and "redis" not in counted   # is not counted
    assert "webhook" not in counted                # in one memory: not stored (counts as 1)
    assert words(db_dsn, B) == {}                  # one memory: nothing in two
    state = owner_execute(db_dsn, "SELECT namespace, docs FROM lexicon_state ORDER BY 1")
    assert state == [(A, 3), (B, 1)]


async def test_a_namespace_is_due_again_when_enough_new_memories_arrive(settings, monkeypatch):
    monkeypatch.setattr(lexicon, "DUE_SMALL", 2)      # above two memories, wait for 50% more
    monkeypatch.setattr(lexicon, "DUE_SHARE", 0.5)
    async with open_backend(settings, None) as backend:
        for i in range(4):
            await backend.remember(WRITER, A, content=f"Runbook step {i} restarts the ledger.")
        assert await lexicon.refresh_due(backend) == {A: 4}
        await backend.remember(WRITER, A, content="Runbook step 4 pages the on-call.")
        assert await lexicon.due(backend) == []               # 1 new of 4: not yet
        await backend.remember(WRITER, A, content="Runbook step 5 closes the incident.")
        assert [r["new"] for r in await lexicon.due(backend)] == [2]   # 2 of 4: due
        assert await lexicon.refresh_due(backend) == {A: 6}


async def test_stats_reports_due_namespaces_within_the_callers_scope(settings):
    async with open_backend(settings, None) as backend:
        await backend.remember(WRITER, A, content="Ledger amounts are integers.")
        await backend.remember(WRITER, B, content="Webhooks are signed.")
        scoped = Principal(token_id=1, surface="cursor", namespaces=(A,))
        assert (await backend.stats(scoped))["lexicon"] == {"due": [A]}
        assert (await backend.stats(WRITER))["lexicon"] == {"due": [A, B]}


@pytest.fixture
def fast_settings(db_dsn, tmp_path):
    return make_settings(db_dsn, tmp_path, lexicon_refresh_seconds=0.2, embed_worker=False)


async def test_the_server_recounts_a_namespace_by_itself_after_writes(fast_settings, db_dsn):
    with thread_server(fast_settings) as running:
        async with running.client(WEB_TOKEN) as client:
            for content in ("Ledger amounts are integers.", "The ledger is append-only."):
                await client.call_tool("memory_remember", {"namespace": A, "content": content})
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                stats = (await client.call_tool("stats", {})).structured_content
                if not stats["lexicon"]["due"]:
                    break
                await asyncio.sleep(0.1)
        assert not stats["lexicon"]["due"]
    assert words(db_dsn, A).get("ledger") == 2


def test_the_due_check_reads_only_each_namespaces_own_new_memories(db_conn, db_dsn):
    """The check runs every few seconds on pooled connections, so its per-namespace count
    becomes a prepared statement; a plan reused for any values walked the seq index from the
    namespace's last count and filtered by namespace, so a small namespace written before a
    large one read every memory of the large one, on every check (74 ms at 111k memories)."""
    small, large = "lex-small", "lex-large"
    bulk_insert_memories(db_conn, small, 1000)
    bulk_insert_memories(db_conn, large, 10000)
    db_conn.execute("ANALYZE memories")
    for ns in (small, large):
        db_conn.execute("SELECT memhub_refresh_lexicon(%s)", [ns])

    async def plans_of_the_check() -> list[dict]:

        import psycopg
        from psycopg.rows import dict_row

        async with await psycopg.AsyncConnection.connect(db_dsn, row_factory=dict_row) as conn:
            async def check() -> list[dict]:
                async with conn.transaction():
                    await conn.execute("SELECT set_config('memhub.namespaces', '*', true)")
                    return await lexicon.due_in(conn)

            await conn.execute("SET ROLE memhub_app")
            for _ in range(12):  # past psycopg's 5 runs before preparing, then PostgreSQL's 5
                assert await check() == []
            notices: list[str] = []
            conn.add_notice_handler(lambda d: notices.append(d.message_primary))
            await conn.execute("RESET ROLE")  # loading auto_explain takes a superuser
            await conn.execute("LOAD 'auto_explain'")
            for name, value in {"auto_explain.log_format": "json",
                                "auto_explain.log_analyze": "on",
                                "auto_explain.log_min_duration": "0",
                                "auto_explain.log_level": "notice",
                                "client_min_messages": "notice"}.items():
                await conn.execute("SELECT set_config(%s, %s, false)", [name, value])
            await conn.execute("SET ROLE memhub_app")
            assert await check() == []
        bodies = [text.split("plan:", 1)[1].strip() for text in notices if "plan:" in text]
        return [json.loads(body) for body in bodies if body.startswith("{")]

    def removed(plan: dict) -> int:
        return sum(n.get("Rows Removed by Filter", 0) for n in nodes(plan))

    counts = [p for p in asyncio.run(plans_of_the_check()) if "AS new" in p["Query Text"]]
    assert len(counts) == 2                                  # one per namespace
    # Rows read and dropped: at most the small namespace's own 1,000, never the large one's.
    assert all(removed(p["Plan"]) <= 1000 for p in counts), json.dumps(
        [p["Plan"] for p in counts], indent=1)
