"""Refuse an oversized POST /mcp before the MCP layer reads it.

The largest legitimate request is an artifact_put of `artifact_max_bytes` bytes: base64
makes that 4/3 as large, and the JSON-RPC envelope adds a little. Anything over that bound
is answered 413 with memhub's JSON error, from the Content-Length header when there is one
(nothing is read), or as soon as a chunked body has streamed past the bound.

This is the one limit on /mcp. The MCP SDK has a request limit of its own (4 MiB unless told
otherwise) that answers a bare text 413, and it enforces it by reading the whole body into a
bytearray and handing on a bytes copy of it, both held until the call returns: 135 MB of a
full-cap artifact_put on top of what the MCP layer parses. `take_over_mcp_body_limit` takes it
out of the path, so the documented cap holds and the body is held once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware

from ..errors import TooLarge
from .token_gate import send_error

ENVELOPE_BYTES = 1024 * 1024

Scope = dict[str, Any]


def mcp_body_limit(artifact_max_bytes: int) -> int:
    return (artifact_max_bytes + 2) // 3 * 4 + ENVELOPE_BYTES


def take_over_mcp_body_limit(mcp_app: Any) -> None:
    """Take the MCP SDK's request-body limiter out of `mcp_app` (fastmcp's http_app), leaving
    BodyLimit, installed before it on /mcp, as the one limit.

    fastmcp builds the SDK's session manager in its lifespan, so this runs once that lifespan
    has: the manager calls its `asgi_app` (the limiter) for every request, and the limiter
    calls its `app`; the manager is pointed at that app directly (both public attributes).
    When they are not found (another SDK or fastmcp layout), memhub refuses to start rather
    than serve with the SDK's 4 MiB limit, or its copies, again.
    """
    for route in getattr(mcp_app, "routes", ()):
        manager = getattr(getattr(route, "app", None), "session_manager", None)
        limiter = getattr(manager, "asgi_app", None)
        if (isinstance(manager, StreamableHTTPSessionManager)
                and isinstance(limiter, RequestBodyLimitMiddleware)):
            # Annotated as the limiter's class, used only as an ASGI callable (handle_request).
            manager.asgi_app = limiter.app  # type: ignore[assignment]
            return
    raise RuntimeError("the MCP SDK's request-body limiter was not found on the /mcp app, so "
                       "MEMHUB_ARTIFACT_MAX_BYTES cannot be honoured; check the installed "
                       "mcp and fastmcp versions against constraints.txt")


class BodyLimit:
    def __init__(self, app: Callable[..., Awaitable[None]], max_bytes: int,
                 path: str = "/mcp") -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.path = path

    def _too_large(self) -> TooLarge:
        return TooLarge(f"request body is larger than {self.max_bytes} bytes",
                        remedy="Send less data (artifacts above the cap are refused).",
                        max_bytes=self.max_bytes)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path", "").rstrip("/") != self.path):
            await self.app(scope, receive, send)
            return
        length = None
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
        if length is not None:
            if length > self.max_bytes:
                await send_error(send, self._too_large())
                return
            await self.app(scope, receive, send)
            return
        # Chunked: read (and count) the body here, up to the bound, then hand it on. The MCP
        # layer would buffer the whole body anyway; this only stops it at the bound.
        messages = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                await send_error(send, self._too_large())
                return
            if not message.get("more_body", False):
                break

        await self.app(scope, replaying(messages, receive), send)


def replaying(read: list[dict[str, Any]], receive: Callable) -> Callable:
    """A `receive` that hands on the messages already `read` (in order), then reads on: for a
    middleware that looked at the body before the app behind it."""

    async def replay() -> dict[str, Any]:
        if read:
            return read.pop(0)
        return await receive()

    return replay


async def peek_body(receive: Callable, limit: int) -> tuple[list[dict[str, Any]], bytes | None]:
    """Read the request's body messages while they add up to at most `limit` bytes: (the
    messages read, to hand on with `replaying`; the whole body, or None when it is larger, or
    the client went away first)."""
    read: list[dict[str, Any]] = []
    size = 0
    while size <= limit:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return read, None
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            if size > limit:
                return read, None
            return read, b"".join(m.get("body", b"") for m in read)
    return read, None
