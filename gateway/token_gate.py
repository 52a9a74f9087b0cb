"""The token gate for `/mcp` and `/artifact`: a pure ASGI middleware.

Accepts `Authorization: Bearer <token>` or `?token=<token>` (the claude.ai web connector cannot
send headers). The resolved `Principal` is put in the request scope's state, where tools read
it; it is never taken from a tool argument. The `token` query parameter is removed from the
scope before the request goes further, so nothing downstream can log it.

The query parameter counts only under its plain name `token`: a name that merely decodes to it
(`%74oken`, `t%6Fken`) is just another parameter, so there is one spelling to strip here and
to mask in the log (which masks the other spellings too: logs.redact_query).

Refusing a token is made cheap: a string that cannot be a token (memhub issues `mh_` and
URL-safe characters; only MCP_AUTH_TOKEN may be any string) is refused without a database
lookup, and an address that keeps sending refused tokens is answered 429 before any lookup
(gateway/rate_limit.py).
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote_plus

from ..errors import MemhubError, RateLimited, Unauthorized
from ..storage.principal import Principal
from .rate_limit import FailedLookupLimiter

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable, Callable], Awaitable[None]]
Authenticator = Callable[[str], Awaitable[Principal | None]]


# What memhub issues (storage/postgres/operator/tokens.py new_token: "mh_" + token_urlsafe), with
# room for longer ones; the storage refuses anything over 200 characters anyway.
_ISSUED_SHAPE = re.compile(r"mh_[A-Za-z0-9_-]{8,197}")


def extract_token(scope: Scope) -> tuple[str | None, bytes]:
    """(token, query string without the `token` parameter) from an ASGI HTTP scope. The
    Authorization header wins over the query; the first `token=` wins over later ones."""
    token = None
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                token = credentials.strip()
    kept = []
    for pair in scope.get("query_string", b"").split(b"&"):
        name, equals, value = pair.partition(b"=")
        if name == b"token" and equals:
            if token is None:
                token = unquote_plus(value.decode("latin-1"), errors="replace")
        elif pair:
            kept.append(pair)
    return token or None, b"&".join(kept)


def token_shape_check(configured: str | None) -> Callable[[str], bool]:
    """A check of whether a string may be a token, to refuse one that cannot be without a
    database lookup: memhub's own tokens have one shape; `configured` (MCP_AUTH_TOKEN, which
    becomes the web token) may be any string."""
    expected = configured.encode("utf-8") if configured else None

    def plausible(token: str) -> bool:
        if _ISSUED_SHAPE.fullmatch(token):
            return True
        return expected is not None and hmac.compare_digest(
            token.encode("utf-8", "replace"), expected)

    return plausible


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


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


class TokenGate:
    def __init__(self, app: ASGIApp, authenticate: Authenticator, prefixes: tuple[str, ...],
                 plausible: Callable[[str], bool] | None = None,
                 limiter: FailedLookupLimiter | None = None,
                 on_refused: Callable[[str], None] | None = None,
                 resource_metadata: tuple[str, str] | None = None):
        """`on_refused(reason)` counts each refusal: "missing", "invalid" or "rate_limited".
        `resource_metadata` (path prefix, URL): a 401 under that prefix names the RFC 9728
        metadata URL, where an OAuth client discovers how to get a token (oauth/)."""
        self.app = app
        self.resource_metadata = resource_metadata
        self.on_refused = on_refused or (lambda reason: None)
        self.authenticate = authenticate
        self.prefixes = prefixes
        self.plausible = plausible or (lambda token: True)
        self.limiter = limiter

    def _guarded(self, path: str) -> bool:
        return any(_under(path, p) for p in self.prefixes)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or not self._guarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        token, query = extract_token(scope)
        scope = dict(scope, query_string=query)
        address = (scope.get("client") or ("",))[0] or ""
        limiter = self.limiter
        spent = False
        if token and limiter is not None and not limiter.known(token):
            wait = limiter.retry_after(address)
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                self.on_refused("rate_limited")
                await send_error(
                    send,
                    RateLimited("too many refused tokens from this address",
                                retry_after_seconds=seconds),
                    [(b"retry-after", str(seconds).encode())],
                )
                return
            spent = limiter.reserve(address)
        try:
            principal = (await self.authenticate(token)
                         if token and self.plausible(token) else None)
        except MemhubError as err:
            if spent and limiter is not None:
                limiter.refund(address)  # the database failed, not the token
            await send_error(send, err)
            return
        if principal is None:
            if token and limiter is not None:
                if not spent:
                    limiter.spend(address)
                limiter.forget(token)
            self.on_refused("missing" if not token else "invalid")
            reason = "missing token" if not token else "invalid or revoked token"
            header = f'Bearer realm="memhub", error="invalid_token", error_description="{reason}"'
            if self.resource_metadata and _under(scope["path"], self.resource_metadata[0]):
                header += f', resource_metadata="{self.resource_metadata[1]}"'
            await send_error(
                send,
                Unauthorized(reason),
                [(b"www-authenticate", header.encode())],
            )
            return
        if limiter is not None and token is not None:
            if spent:
                limiter.refund(address)
            limiter.accepted(token)
        state = dict(scope.get("state") or {})
        state["principal"] = principal
        scope["state"] = state
        await self.app(scope, receive, send)
