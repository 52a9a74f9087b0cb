"""recall and the retrieval guard's verdicts through a real server and a real MCP client."""

from __future__ import annotations

import json

import pytest
from fastmcp.exceptions import ToolError

from tests.conftest import WEB_TOKEN, make_settings
from tests.support import db
from tests.support.server import thread_server
from tests.support.wait import until

NS = "acme"
SIGNING = ("Webhook deliveries are signed with HMAC-SHA256 over the timestamp and the body; the "
           "signature goes in the Paystream-Signature header.")
OTHERS = (
    "Invoices are generated on the first of each month for the previous month.",
    "Dashboard sessions last 12 hours with a one hour idle timeout.",
    "Payout batches are submitted to the bank as one file per currency.",
)
CLEAR = "how are webhook deliveries signed"
# Shares one of its two words with a memory: memory_search ranks that memory (one word in two
# is a lexical hit), but it is no answer.
NONSENSE = "webhook mascot"


async def remember(client, content, namespace=NS, **kw):
    result = await client.call_tool("memory_remember", {"namespace": namespace,
                                                        "content": content, **kw})
    return result.structured_content["memory"]["id"]


async def call(client, tool, **args):
    return (await client.call_tool(tool, {"namespace": NS, **args})).structured_content


async def error_code(client, tool, args) -> str:
    with pytest.raises(ToolError) as err:
        await client.call_tool(tool, args)
    return json.loads(str(err.value))["code"]


async def wait_embedded(client, query, memory_id, timeout=60.0) -> None:
    """Until the memory is the top semantic hit (the model loads and the worker embeds off the
    request path)."""
    async def model_state() -> str | None:
        stats = (await client.call_tool("stats", {})).structured_content
        state = stats["embedding_model"]["state"]
        return None if state == "loading" else state

    assert await until(model_state, timeout=timeout, what="the model loaded") == "ready"

    async def top_hit() -> bool:
        found = await call(client, "memory_search", query=query, mode="semantic", limit=1)
        return [r["id"] for r in found["results"]] == [memory_id]

    await until(top_hit, timeout=timeout, what="the memory semantically searchable")


async def seed(client) -> str:
    mid = await remember(client, SIGNING)
    for text in OTHERS:
        await remember(client, text)
    await wait_embedded(client, SIGNING, mid)
    return mid


async def test_recall_admits_a_clear_match(server):
    async with server.client(WEB_TOKEN) as c:
        mid = await seed(c)
        got = await call(c, "recall", query=CLEAR)
        assert got["answered"] is True
        assert got["results"][0]["id"] == mid and got["results"][0]["match"] == "strong"
        assert all(r["match"] in ("strong", "weak") for r in got["results"])
        assert got["rejected"] == sum(got["reasons"].values())


async def test_recall_answers_nothing_to_a_question_nothing_recorded_answers(server):
    async with server.client(WEB_TOKEN) as c:
        await seed(c)
        got = await call(c, "recall", query=NONSENSE)
        assert got["results"] == [] and got["answered"] is False
        assert got["rejected"] >= 1 and set(got["reasons"]) == {"no_match"}


async def test_memory_search_ranks_every_result_and_marks_the_guards_verdict(server):
    async with server.client(WEB_TOKEN) as c:
        mid = await seed(c)
        clear = await call(c, "memory_search", query=CLEAR)
        assert clear["results"][0]["id"] == mid
        assert clear["results"][0]["match"] == "strong"
        nonsense = await call(c, "memory_search", query=NONSENSE)
        assert nonsense["results"], "memory_search always ranks"
        assert {r["match"] for r in nonsense["results"]} == {"none"}


async def test_recall_never_returns_a_superseded_forgotten_or_other_namespace_memory(server):
    """Each retired memory is the question's exact text, the strongest match there is: only
    the stage-0 filter, which runs before the guard, can keep it out."""
    question = "The settlement cutoff is 22:00 UTC for card payments."
    async with server.client(WEB_TOKEN) as c:
        old = await remember(c, question)
        new = await remember(c, "The settlement cutoff moved to 21:00 UTC for card payments.",
                             supersedes=[old])
        gone = await remember(c, question + " (copy)")
        await call(c, "memory_forget", id=gone, reason="duplicate")
        elsewhere = await remember(c, question, namespace="other")
        await wait_embedded(c, "The settlement cutoff moved to 21:00 UTC for card payments.",
                            new)
        got = await call(c, "recall", query=question)
        ids = [r["id"] for r in got["results"]]
        assert ids == [new]
        assert not {old, gone, elsewhere} & set(ids)


async def test_memory_context_spends_nothing_on_candidates_the_guard_rejects(server):
    async with server.client(WEB_TOKEN) as c:
        mid = await seed(c)
        nothing = await call(c, "memory_context", query=NONSENSE)
        assert nothing["memories"] == [] and nothing["rejected"] >= 1
        assert nothing["tokens_used"] <= 2
        clear = await call(c, "memory_context", query=CLEAR)
        assert clear["memories"][0]["id"] == mid
        newest = await call(c, "memory_context")
        assert len(newest["memories"]) == 4 and newest["rejected"] == 0


async def test_a_read_only_token_may_call_recall(server, db_dsn):
    async with server.client(WEB_TOKEN) as c:
        mid = await seed(c)
    token = db.insert_token(db_dsn, "cursor", read_only=True)
    async with server.client(token) as c:
        got = await call(c, "recall", query=CLEAR)
        assert got["results"][0]["id"] == mid


async def test_recall_in_a_namespace_the_token_is_not_scoped_to_is_forbidden(server, db_dsn):
    token = db.insert_token(db_dsn, "cursor", namespaces=["other"])
    async with server.client(token) as c:
        assert await error_code(c, "recall", {"namespace": NS, "query": "q"}) == "FORBIDDEN"


@pytest.mark.parametrize("args", [
    {"query": ""}, {"query": "x" * 1001}, {"query": "ok", "limit": 0},
    {"query": "ok", "limit": 101}, {"query": "ok", "kinds": ["OPINION"]},
])
async def test_recall_refuses_out_of_bounds_arguments(server, args):
    async with server.client(WEB_TOKEN) as c:
        assert await error_code(c, "recall", {"namespace": NS, **args}) == "INVALID_INPUT"


async def test_without_a_model_recall_admits_a_word_match_and_rejects_a_stray_word(db_dsn,
                                                                                    tmp_path):
    settings = make_settings(db_dsn, tmp_path, embed_model_path=tmp_path / "no-model-here")
    with thread_server(settings) as srv:
        async with srv.client(WEB_TOKEN) as c:
            mid = await remember(c, SIGNING)
            for text in OTHERS:
                await remember(c, text)
            got = await call(c, "recall", query="webhook deliveries signed HMAC-SHA256")
            assert got["degraded"] is True
            assert [r["id"] for r in got["results"]] == [mid]
            stray = await call(c, "recall", query=NONSENSE)
            assert stray["degraded"] is True and stray["results"] == []
            assert stray["reasons"] == {"no_match": stray["rejected"]} and stray["rejected"]
