"""What the MCP layer gets from HTTP, normalised first, and its guard's refusals explained.

- `/mcp/` is served as `/mcp`, in place. Starlette would answer it with a 307 to `/mcp`, built
  from the request after the token gate has taken `?token=` out of it (so a client following
  it gets a 401) and from the Host header (so behind a TLS-terminating proxy it points at
  http://). A pasted connector URL often ends in a slash.
- Header values lose surrounding spaces and tabs. RFC 9110 §5.5: a field value excludes its
  optional whitespace. uvicorn's httptools parser keeps trailing whitespace, so the MCP SDK's
  SEP-2243 check compared `Mcp-Method: tools/call ` with the body's method and refused the
  request (found by the conformance suite's http-header-validation scenario).
- fastmcp's DNS-rebinding guard refuses an unknown Host with a bare "Misdirected Request"
  (421) and an unknown browser Origin with "Forbidden Origin" (403). The usual cause is a
  deployment behind a proxy whose public name memhub was not told, so the refusal becomes
  memhub's JSON error (code FORBIDDEN, the same status) naming the setting that allows it, and
  the operator's log says so once per refused name.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import Forbidden
from .token_gate import send_error

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
_OWS = b" \t"
_GUARD_STATUSES = (421, 403)
_LOGGED_LIMIT = 32  # refused names logged once each, at most this many per process


class NormaliseMcpRequest:
    def __init__(self, app: Callable[..., Awaitable[None]], path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self._logged: set[tuple[int, str]] = set()

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope.get("path", "").rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        headers = [(name, value.strip(_OWS)) for name, value in scope.get("headers", [])]
        scope = dict(scope, path=self.path, raw_path=self.path.encode(), headers=headers)
        await self.app(scope, receive, self._explaining(scope, send))

    def _explaining(self, scope: Scope, send: Callable) -> Callable:
        """`send`, with the guard's plain-text 421 / 403 replaced by a JSON error."""
        replaced = False

        async def wrapped(message: dict[str, Any]) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and _is_guard_refusal(message):
                replaced = True
                await send_error(send, self._refusal(scope, message["status"]),
                                 status=message["status"])
                return
            if replaced:
                return  # the guard's own body
            await send(message)

        return wrapped

    def _refusal(self, scope: Scope, status: int) -> Forbidden:
        wanted = {b"host": "", b"origin": ""}
        for name, value in scope.get("headers", []):
            if name in wanted:
                wanted[name] = value.decode("latin-1")[:200]
        if status == 421:
            name, setting = wanted[b"host"], "MEMHUB_PUBLIC_URL or MEMHUB_ALLOWED_HOSTS"
            error = Forbidden(f"this server does not answer for the host {name!r}",
                              remedy=f"If {name!r} is this server's public name, set "
                                     f"{setting} to it and restart memhub.",
                              host=name)
        else:
            name, setting = wanted[b"origin"], "MEMHUB_ALLOWED_ORIGINS"
            error = Forbidden(f"requests from the browser origin {name!r} are not accepted",
                              remedy=f"If {name!r} should reach /mcp, add it to {setting} "
                                     "and restart memhub.",
                              origin=name)
        key = (status, name)
        if key not in self._logged and len(self._logged) < _LOGGED_LIMIT:
            self._logged.add(key)
            logger.warning("request refused by the DNS-rebinding guard",
                           extra={"status": status, "refused": name, "setting": setting})
        return error


def _is_guard_refusal(message: dict[str, Any]) -> bool:
    """fastmcp's guard answers with no content type (or text/plain); memhub's own errors and
    the MCP layer's answers are JSON."""
    if message.get("status") not in _GUARD_STATUSES:
        return False
    for name, value in message.get("headers", []):
        if name.lower() == b"content-type":
            return value.startswith(b"text/plain")
    return True
