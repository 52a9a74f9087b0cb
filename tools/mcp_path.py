"""`/mcp/` is served as `/mcp`, in place, not redirected.

Starlette answers `/mcp/` with a 307 to `/mcp`. That redirect is built from the request after
the token gate has taken `?token=` out of it (so a client that follows it gets a 401), and from
the Host header (so behind a TLS-terminating proxy it points at http://). A pasted connector
URL often ends in a slash; rewriting the path before the gate and the router serves it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]


class McpPathSlash:
    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and scope.get("path") == self.path + "/":
            scope = dict(scope, path=self.path, raw_path=self.path.encode())
        await self.app(scope, receive, send)
