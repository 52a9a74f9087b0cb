"""Start embedding a search's query as soon as its authenticated request has arrived.

A hybrid or semantic search waits for its query's vector before the semantic leg can start,
and the embedding is the longest step on that path. The tool itself only runs after fastmcp's
HTTP and MCP layers have parsed and validated the request (~1 ms of the event loop's time, more
on a busy machine), so this middleware, inside the token gate and the body limit, reads a small
POST /mcp body once: when it is a `tools/call` of `memory_search` (mode hybrid or semantic),
`recall` or `memory_context` with a query, the query (normalised as the search will:
`check_query`), with its `also` phrasings in one batch when it has them, starts embedding in a
worker thread (`Embedder.prefetch`) while those layers run on the event loop, and the search
joins it (`Embedder.query_vector` / `query_vectors`) instead of starting its own (its effect on
search latency at 100k memories: docs/performance.md).

Nothing else changes: the body is handed on byte for byte; a body over PEEK_BYTES (an
artifact upload) is not parsed and streams on as it came; anything unexpected (not JSON, a
batch, another tool, a bad argument) is left to the MCP layer to answer. Only an authenticated
request gets here, and the work started is the work its search does anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .. import bounded_json
from ..errors import MemhubError
from ..storage.search import check_ask, check_query
from .body_limit import peek_body, replaying

Scope = dict[str, Any]
# A search's JSON-RPC body is well under this (a 1000-char query, its filters, the envelope).
PEEK_BYTES = 16 * 1024


class QueryPrefetch:
    def __init__(self, app: Callable[..., Awaitable[None]], embedder: Callable[[], Any],
                 path: str = "/mcp") -> None:
        self.app = app
        self.embedder = embedder  # returns the Embedder, or None before the lifespan made it
        self.path = path

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path") != self.path
                or (scope.get("state") or {}).get("principal") is None):
            await self.app(scope, receive, send)
            return
        read, body = await peek_body(receive, PEEK_BYTES)
        if body is not None:
            self._prefetch(body)
        await self.app(scope, replaying(read, receive), send)

    def _prefetch(self, body: bytes) -> None:
        embedder = self.embedder()
        if embedder is None or not embedder.ready:
            return
        texts = search_texts(body)
        if texts:
            embedder.prefetch(texts[0], texts[1:])


def search_texts(body: bytes) -> tuple[str, ...] | None:
    """The texts a JSON-RPC body's search will embed (its query, then its `also` phrasings
    as the search reads them: check_ask), or None (not such a call, or one the search will
    refuse)."""
    # Every other tool call is passed over without parsing its JSON (a name spelled with
    # escapes is missed: its search then embeds the query itself).
    if not any(name in body for name in (b'"memory_search"', b'"recall"', b'"memory_context"')):
        return None
    try:
        message = bounded_json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("arguments"), dict):
        return None
    arguments = params["arguments"]
    if params.get("name") == "memory_search":
        if arguments.get("mode", "hybrid") not in ("hybrid", "semantic"):
            return None
        required = True
    elif params.get("name") == "recall":
        required = True
    elif params.get("name") == "memory_context":
        required = False
    else:
        return None
    try:
        query = check_query(arguments.get("query"), required=required)
        if query is None:
            return None
        # `also` sent as its JSON text is decoded later (tools/json_arguments.py): the
        # phrasings are then embedded by the search, the query here.
        also = arguments.get("also")
        return check_ask(query, also).texts if isinstance(also, list) else (query,)
    except MemhubError:
        return None
