"""A token's limits, applied to every request the token gate let through (`/mcp`, `/artifact`):
a pure ASGI middleware just inside the gate, before the body is read.

First the rate, when the token has one (a token bucket: `rate_burst` requests at once, refilled
at `rate_per_minute`); then the requests in flight: over `max_in_flight`, a request waits up to
MEMHUB_TOKEN_QUEUE_WAIT_SECONDS for a slot (admission.py). Refused: HTTP 429 RATE_LIMITED with
`Retry-After` and details.retry_after_seconds. On `/mcp` the body is a JSON-RPC error whose
`data` is memhub's error, so an MCP client raises it as the call's error with its code and
remedy; on `/artifact` it is memhub's JSON error. The limits are the token's own (read with it
at every request, so a change applies at once) else MEMHUB_TOKEN_*.

Why here and not per tool call: a refusal costs no body read, no JSON-RPC parsing and no MCP
session, and holds no database connection, so one token's flood cannot take the pool or the
cores from the others; it covers `/artifact` downloads and every JSON-RPC method, not only
tools/call; and HTTP clients and proxies understand 429 with Retry-After. The counts are per
process: with several replicas a token may have this many in flight at each.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from ..admission import Admission
from ..config import Settings
from ..errors import RateLimited
from ..storage.principal import Principal
from .mcp_request import send_jsonrpc_error
from .token_gate import send_error

Scope = dict[str, Any]
# JSON-RPC's range for implementation-defined server errors.
SERVER_ERROR = -32000


class TokenLimits:
    def __init__(self, app: Callable[..., Awaitable[None]], admission: Admission,
                 settings: Settings, on_refused: Callable[[str], None] | None = None) -> None:
        """`on_refused(reason)` counts each refusal: "in_flight" or "rate"."""
        self.app = app
        self.admission = admission
        self.settings = settings
        self.on_refused = on_refused or (lambda reason: None)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        principal = (scope.get("state") or {}).get("principal")
        if scope["type"] != "http" or not isinstance(principal, Principal):
            await self.app(scope, receive, send)
            return
        token = principal.token_id
        limits = principal.limits.resolved(self.settings)
        if limits.rate_per_minute > 0:
            wait = self.admission.take(token, limits.rate_per_minute, limits.rate_burst)
            if wait > 0:
                await self._refuse(scope, send, "rate", math.ceil(wait), RateLimited(
                    f"this token may send {limits.rate_per_minute} requests a minute, "
                    f"{limits.rate_burst} at once; none is left",
                    remedy="Wait the seconds in details.retry_after_seconds (the Retry-After "
                           "header), then retry; space requests out, or ask the operator to "
                           "raise the token's rate (memhub-admin token limits, the "
                           "dashboard).",
                    limit="rate", rate_per_minute=limits.rate_per_minute,
                    rate_burst=limits.rate_burst))
                return
        if not await self.admission.enter(token, limits.max_in_flight,
                                          self.settings.token_queue_wait_seconds):
            if limits.rate_per_minute > 0:
                self.admission.give_back(token, limits.rate_burst)
            await self._refuse(scope, send, "in_flight", 1, RateLimited(
                f"this token has {limits.max_in_flight} requests in flight, as many as it may, "
                "and none ended in time",
                remedy="Retry after the seconds in details.retry_after_seconds (the Retry-After "
                       "header); send fewer requests at once (wait for answers before sending "
                       "more), or ask the operator to raise the token's max_in_flight "
                       "(memhub-admin token limits, the dashboard).",
                limit="in_flight", max_in_flight=limits.max_in_flight))
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.leave(token)

    async def _refuse(self, scope: Scope, send: Callable, reason: str, seconds: int,
                      error: RateLimited) -> None:
        self.on_refused(reason)
        seconds = max(1, seconds)
        error.details["retry_after_seconds"] = seconds
        headers = [(b"retry-after", str(seconds).encode())]
        if scope.get("path") == "/mcp":
            await send_jsonrpc_error(send, error.http_status, SERVER_ERROR,
                                     f"{error.code}: {error.message}. {error.remedy}", error,
                                     headers)
        else:
            await send_error(send, error, headers)
