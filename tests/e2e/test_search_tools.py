"""memory_search and memory_context through a real server and a real MCP client over HTTP."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from fastmcp.exceptions import ToolError

from tests.conftest import WEB_TOKEN, make_settings
from tests.support import db
from tests.support.server import thread_server
from tests.support.wait import until

NS = "acme"


async def remember(client, content, **kw):
    result = await client.call_tool("memory_remember", {"namespace": NS, "content": content,
                                                        **kw})
    return result.structured_content["memory"]["id"]


async def search(client, query, **kw):
    result = await client.call_tool("memory_search", {"namespace": NS, "query": query, **kw})
    return result.structured_content


async def error_code(client, tool, args) -> str:
    with pytest.raises(ToolError) as err:
        await client.call_tool(tool, args)
    return json.loads(str(err.value))["code"]


async def model_state(client, timeout=60.0) -> str:
    """The model's state once it has stopped loading (it loads off the request path)."""
    deadline = time.monotonic() + timeout
    while True:
        stats = (await client.call_tool("stats", {})).structured_content
        state = stats["embedding_model"]["state"]
        if state != "loading" or time.monotonic() > deadline:
            return state


async def wait_semantic(client, query, memory_id, timeout=30.0) -> float:
    assert await model_state(client) == "ready"
    started = time.monotonic()

    async def found() -> bool:
        hits = await search(client, query, mode="semantic", limit=3)
        return memory_id in [r["id"] for r in hits["results"]]

    await until(found, timeout=timeout, what="the memory semantically searchable")
    return time.monotonic() - started


async def test_search_after_a_supersession_returns_only_the_replacement(server):
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        old = await remember(c, "The job queue runs on Redis.", kind="DECISION")
        new = await remember(c, "The job queue runs on PostgreSQL with FOR UPDATE SKIP LOCKED; "
                                "Redis was removed.", kind="DECISION", supersedes=[old])
        for mode in ("hybrid", "lexical"):
            found = await search(c, "redis", mode=mode)
            assert [r["id"] for r in found["results"]] == [new]
            assert "degraded" not in found
        await wait_semantic(c, "which technology backs the job queue", new)
        found = await search(c, "redis job queue", mode="semantic")
        assert old not in [r["id"] for r in found["results"]]


async def test_results_say_why_they_matched(server):
    async with server.client(WEB_TOKEN) as c:
        mid = await remember(c, "Webhook deliveries are signed with HMAC-SHA256.")
        await wait_semantic(c, "how are webhook deliveries signed", mid)
        found = await search(c, "webhook signature HMAC")
        [hit] = found["results"]
        assert hit["found_by"] == "words+meaning" and hit["match"] == "strong"
        assert hit["text"].startswith("<<<UNTRUSTED_DATA>>>")


async def test_a_write_becomes_semantically_searchable_promptly(server):
    async with server.client(WEB_TOKEN) as c:
        mid = await remember(c, "Settlement files arrive from the bank at 04:00 CET.")
        assert await wait_semantic(c, "Settlement files arrive from the bank", mid) < 10


@pytest.mark.parametrize("args", [
    {"query": ""},
    {"query": "x" * 1001},
    {"query": "ok", "limit": 0},
    {"query": "ok", "limit": 101},
    {"query": "ok", "mode": "fuzzy"},
    {"query": "ok", "kinds": ["OPINION"]},
    {"query": "ok", "tags": ["x" * 65]},
])
async def test_memory_search_refuses_out_of_bounds_arguments(server, args):
    async with server.client(WEB_TOKEN) as c:
        assert await error_code(c, "memory_search", {"namespace": NS, **args}) == "INVALID_INPUT"


@pytest.mark.parametrize("args", [
    {"budget_tokens": 0}, {"budget_tokens": 32001}, {"query": "y" * 1001}, {"kinds": []},
])
async def test_memory_context_refuses_out_of_bounds_arguments(server, args):
    async with server.client(WEB_TOKEN) as c:
        assert await error_code(c, "memory_context", {"namespace": NS, **args}) == "INVALID_INPUT"


async def test_a_token_scoped_elsewhere_is_forbidden_before_any_query(server, db_dsn):
    token = db.insert_token(db_dsn, "cursor", namespaces=["other"])
    async with server.client(token) as c:
        assert await error_code(c, "memory_search", {"namespace": NS, "query": "q"}) == \
            "FORBIDDEN"
        assert await error_code(c, "memory_context", {"namespace": NS}) == "FORBIDDEN"


async def test_a_read_only_token_may_search(server, db_dsn):
    async with server.client(WEB_TOKEN) as c:
        mid = await remember(c, "Ledger entries are immutable.")
    token = db.insert_token(db_dsn, "cursor", read_only=True)
    async with server.client(token) as c:
        assert [r["id"] for r in (await search(c, "ledger entries"))["results"]] == [mid]


@pytest.mark.parametrize("budget", [1, 30, 120, 2000])
async def test_memory_context_stays_within_its_budget_and_serves_decisions_first(server, budget):
    async with server.client(WEB_TOKEN) as c:
        for i in range(12):
            await remember(c, f"Note {i}: the dashboard caches org settings for {i} minutes.")
        decision = await remember(c, "Decision: the dashboard reads org settings from the API.",
                                  kind="DECISION")
        result = (await c.call_tool("memory_context", {"namespace": NS,
                                                       "budget_tokens": budget}))
        packed = result.structured_content
        assert packed["tokens_used"] <= budget == packed["budget_tokens"]
        assert packed["omitted"] == 13 - len(packed["memories"])
        if budget >= 120:
            assert packed["memories"][0]["id"] == decision or \
                decision in [m["id"] for m in packed["memories"]]


async def test_stats_shows_the_model_and_the_worker(server):
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        stats = (await c.call_tool("stats", {})).structured_content
        assert stats["embedding_model"]["worker"]["running"] is True


async def test_without_a_model_hybrid_degrades_to_lexical_and_semantic_is_unavailable(db_dsn,
                                                                                      tmp_path):
    settings = make_settings(db_dsn, tmp_path, embed_model_path=tmp_path / "no-model-here")
    with thread_server(settings) as srv:
        assert httpx.get(f"{srv.base_url}/healthz").status_code == 200
        async with srv.client(WEB_TOKEN) as c:
            assert await model_state(c) == "unavailable"
            mid = await remember(c, "Payout batches close at 17:00 UTC.")
            found = await search(c, "payout batches")
            assert found["degraded"] is True
            assert [r["id"] for r in found["results"]] == [mid]
            assert await error_code(c, "memory_search", {"namespace": NS, "query": "payout",
                                                         "mode": "semantic"}) == "UNAVAILABLE"
            packed = (await c.call_tool("memory_context", {"namespace": NS})).structured_content
            assert packed["degraded"] is True and packed["memories"][0]["id"] == mid
            stats = (await c.call_tool("stats", {})).structured_content
            assert stats["embedding_queue"]["pending"] == 1  # kept for when a model exists
