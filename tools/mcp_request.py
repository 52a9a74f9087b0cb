"""What the MCP layer gets from HTTP, normalised first: the path and the header values.

- `/mcp/` is served as `/mcp`, in place. Starlette would answer it with a 307 to `/mcp`, built
  from the request after the token gate has taken `?token=` out of it (so a client following
  it gets a 401) and from the Host header (so behind a TLS-terminating proxy it points at
  http://). A pasted connector URL often ends in a slash.
- Header values lose surrounding spaces and tabs. RFC 9110 §5.5: a field value excludes its
  optional whitespace. uvicorn's httptools parser keeps trailing whitespace, so the MCP SDK's
  SEP-2243 check compared `Mcp-Method: tools/call ` with the body's method and refused the
  request (found by the conformance suite's http-header-validation scenario).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
_OWS = b" \t"


class NormaliseMcpRequest:
    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") == self.path:
            headers = scope.get("headers", [])
            scope = dict(scope, path=self.path, raw_path=self.path.encode(),
                         headers=[(name, value.strip(_OWS)) for name, value in headers])
        await self.app(scope, receive, send)
