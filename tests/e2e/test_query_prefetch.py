"""A search's query starts embedding as soon as its authenticated request is read
(gateway/query_prefetch.py, Embedder.prefetch / query_vector): through a real server and a real
MCP client, the real model, and the middleware alone over real ASGI messages."""

from __future__ import annotations

import json

import httpx
import numpy as np

from memhub.gateway.query_prefetch import PEEK_BYTES, QueryPrefetch
from tests.conftest import WEB_TOKEN
from tests.e2e.test_search_tools import NS, model_state
from tests.support.retrieval import embedder

__all__ = ["embedder"]


async def counts(client) -> dict[str, int]:
    model = (await client.call_tool("stats", {})).structured_content["embedding_model"]
    return {**model["query_prefetch"], **model["query_cache"]}


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in ("started", "joined", "hits", "misses")}


async def test_a_search_query_is_embedded_once_starting_before_the_tool_runs(server):
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        before = await counts(c)
        await c.call_tool("memory_search", {"namespace": NS, "query": "  which queue won  "})
        change = delta(await counts(c), before)
    assert change["started"] == 1
    # Computed once (the prefetch's miss); the search joined it or, if it had finished, found
    # its vector in the cache.
    assert change["misses"] == 1
    assert change["joined"] + change["hits"] == 1


async def test_a_recall_question_is_embedded_once_starting_before_the_tool_runs(server):
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        before = await counts(c)
        await c.call_tool("recall", {"namespace": NS, "query": "which queue won"})
        change = delta(await counts(c), before)
    assert change["started"] == 1 and change["misses"] == 1
    assert change["joined"] + change["hits"] == 1


async def test_a_question_and_its_phrasings_are_embedded_once_in_one_prefetch(server):
    """With `also`, the prefetch embeds every text the search will (in one batch), and the
    search joins it rather than embedding the question again beside it."""
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        before = await counts(c)
        await c.call_tool("memory_search", {
            "namespace": NS, "query": "which queue did we pick, 5521",
            "also": ["the job queue we chose 5521", "  background work broker 5521 ",
                     "which queue did we pick, 5521"]})
        change = delta(await counts(c), before)
    # The query and two distinct phrasings (a repeat of the query and spacing are the
    # search's to drop, and the prefetch reads them the same way).
    assert change["started"] == 1 and change["misses"] == 3
    assert change["joined"] == 1 or change["hits"] == 3


async def test_only_an_authenticated_search_that_embeds_starts_early(server):
    async with server.client(WEB_TOKEN) as c:
        assert await model_state(c) == "ready"
        before = await counts(c)
        await c.call_tool("memory_search", {"namespace": NS, "query": "lexical only",
                                            "mode": "lexical"})
        await c.call_tool("memory_search", {"namespace": NS, "query": "   "},
                          raise_on_error=False)
        await c.call_tool("memory_context", {"namespace": NS})
        assert delta(await counts(c), before)["started"] == 0
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "memory_search",
                           "arguments": {"namespace": NS, "query": "no token here"}}}
        refused = httpx.post(server.mcp_url, json=body,
                             headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        assert delta(await counts(c), before)["started"] == 0
        await c.call_tool("memory_context", {"namespace": NS, "query": "the task at hand"})
        assert delta(await counts(c), before)["started"] == 1


async def test_a_prefetched_query_is_embedded_once_and_joined(embedder):
    before = (embedder.prefetch_joined, embedder.cache.misses)
    assert embedder.prefetch("a query nobody asked before, 8431")
    assert not embedder.prefetch("a query nobody asked before, 8431")  # already running
    vector = await embedder.query_vector("a query nobody asked before, 8431")
    assert (embedder.prefetch_joined - before[0], embedder.cache.misses - before[1]) == (1, 1)
    assert np.array_equal(vector, embedder.embed_query("a query nobody asked before, 8431"))
    assert not embedder.prefetch("a query nobody asked before, 8431")  # cached now


class Recorder:
    """Stands in for the embedder to see what the middleware asks of it."""

    ready = True

    def __init__(self) -> None:
        self.queries: list[str] = []

    def prefetch(self, text: str, also=()) -> bool:
        self.queries.append(text)
        self.also = tuple(also)
        return True


async def through(middleware: QueryPrefetch, chunks: list[bytes], principal=object()):
    """Run one POST /mcp with `chunks` as its body; what the app behind it received."""
    seen = bytearray()

    async def app(scope, receive, send):
        while True:
            message = await receive()
            seen.extend(message.get("body", b""))
            if not message.get("more_body"):
                return

    middleware.app = app
    messages = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
                for i, chunk in enumerate(chunks)]

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "state": {"principal": principal} if principal else {}}
    await middleware(scope, receive, None)
    return bytes(seen)


async def test_the_body_is_handed_on_unchanged_and_only_a_small_search_is_read():
    recorder = Recorder()
    middleware = QueryPrefetch(None, embedder=lambda: recorder)
    call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"namespace": NS, "query": " redis? "}}}).encode()
    assert await through(middleware, [call[:20], call[20:]]) == call
    assert recorder.queries == ["redis?"]  # as check_query leaves it
    assert await through(middleware, [call], principal=None) == call
    padded = call[:-1] + b" " * PEEK_BYTES + call[-1:]  # the same call, over the peek bound
    assert await through(middleware, [padded]) == padded
    big = [b"x" * (PEEK_BYTES // 2)] * 5  # an artifact upload: streamed on, not parsed
    assert await through(middleware, big) == b"".join(big)
    other = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "memory_remember", "arguments": {"namespace": NS, "content": "q"}}}).encode()
    for body in (other, b"not json", b"[1, 2]", call.replace(b'"query"', b'"mode": "x", "q"')):
        assert await through(middleware, [body]) == body
    assert recorder.queries == ["redis?"]
