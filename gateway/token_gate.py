"""The token gate for `/mcp` and `/artifact`: a pure ASGI middleware.

Accepts `Authorization: Bearer <token>` or `?token=<token>` (the claude.ai web connector cannot
send headers). The resolved `Principal` is put in the request scope's state, where tools read
it; it is never taken from a tool argument. The `token` query parameter is removed from the
scope before the request goes further, so nothing downstream can log it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ..errors import MemhubError, Unauthorized
from ..storage.principal import Principal

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]
Authenticator = Callable[[str], Awaitable[Principal | None]]


def extract_token(scope: Scope) -> tuple[str | None, bytes]:
    """(token, query string without the token) from an ASGI HTTP scope."""
    token = None
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                token = credentials.strip()
    pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    kept = []
    for key, value in pairs:
        if key == "token":
            token = token or value
        else:
            kept.append((key, value))
    return token, urlencode(kept).encode("latin-1")


async def send_error(send: Callable, error: MemhubError, extra_headers=(),
                     status: int | None = None) -> None:
    """memhub's JSON error as a whole HTTP response, with the error's status unless `status`
    is given."""
    body = json.dumps({"error": error.to_payload()}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *extra_headers,
    ]
    await send({"type": "http.response.start", "status": status or error.http_status,
                "headers": headers})
    await send({"type": "http.response.body", "body": body})


class TokenGate:
    def __init__(self, app: ASGIApp, authenticate: Authenticator, prefixes: tuple[str, ...]):
        self.app = app
        self.authenticate = authenticate
        self.prefixes = prefixes

    def _guarded(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.prefixes)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or not self._guarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        token, query = extract_token(scope)
        scope = dict(scope, query_string=query)
        try:
            principal = await self.authenticate(token) if token else None
        except MemhubError as err:
            await send_error(send, err)
            return
        if principal is None:
            reason = "missing token" if not token else "invalid or revoked token"
            header = f'Bearer realm="memhub", error="invalid_token", error_description="{reason}"'
            await send_error(
                send,
                Unauthorized(reason),
                [(b"www-authenticate", header.encode())],
            )
            return
        state = dict(scope.get("state") or {})
        state["principal"] = principal
        scope["state"] = state
        await self.app(scope, receive, send)
