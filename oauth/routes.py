"""Wiring: the SDK's authorization-server routes (RFC 8414 metadata, RFC 7591 registration,
/authorize, /token, /revoke) over memhub's provider, the RFC 9728 protected resource metadata of
/mcp (at its path-suffixed address and at the root one), and the consent pages under /admin.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import Response
from mcp.server.auth.routes import create_auth_routes, create_protected_resource_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from starlette.routing import Route

from ..errors import MemhubError
from ..runtime import Runtime
from ..web.operator import Operator
from .consent import ConsentPages
from .provider import CLIENT_SOURCE, MemhubOAuthProvider
from .urls import OAuthUrls, oauth_urls, same_resource

logger = logging.getLogger(__name__)

MAX_TOKEN_FORM_BYTES = 64 * 1024
ROOT_METADATA_PATH = "/.well-known/oauth-protected-resource"


class Endpoint:
    """Wraps one SDK endpoint: records the client's address for the audit and registration's
    limits, answers a memhub error the provider raised (RATE_LIMITED from registration, with
    Retry-After; UNAVAILABLE) in memhub's error shape, and at the token endpoint enforces RFC
    8707 there too: the SDK's token handler does not compare a `resource` parameter, so a
    token request naming another resource is refused here with `invalid_target` before the
    handler runs (the body is read, bounded, and replayed)."""

    def __init__(self, app: Callable, resource: Any = None) -> None:
        self.app = app
        self.resource = resource

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # uvicorn's client: X-Forwarded-For only from MEMHUB_TRUSTED_PROXIES (app.proxy_options).
        CLIENT_SOURCE.set((scope.get("client") or ("unknown",))[0])
        started = False

        async def tracked(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._handle(scope, receive, tracked)
        except MemhubError as err:
            if started:
                raise
            logger.warning("oauth endpoint refused", extra={"code": err.code,
                                                            "path": scope.get("path")})
            await _memhub_error(send, err)

    async def _handle(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.resource is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_TOKEN_FORM_BYTES:
                await _oauth_error(send, 413, "invalid_request", "the request body is too large")
                return
        form = parse_qs(body.decode("utf-8", "replace"))
        if any(not same_resource(value, self.resource) for value in form.get("resource", [])):
            await _oauth_error(send, 400, "invalid_target", "resource must be this server's /mcp")
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _memhub_error(send: Callable, err: MemhubError) -> None:
    payload = json.dumps({"error": err.to_payload()}).encode()
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store"),
               (b"content-length", str(len(payload)).encode())]
    wait = err.details.get("retry_after_seconds")
    if isinstance(wait, int):
        headers.append((b"retry-after", str(wait).encode()))
    await send({"type": "http.response.start", "status": err.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _oauth_error(send: Callable, status: int, error: str, description: str) -> None:
    payload = json.dumps({"error": error, "error_description": description}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"cache-control", b"no-store"),
        (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def install(app: FastAPI, rt: Runtime, operator: Operator) -> OAuthUrls | None:
    """Add the OAuth routes when OAuth is served (oauth.urls.oauth_urls); their URLs, or None.
    `operator` is the dashboard's: the consent pages share its login, cookie and lockout."""
    urls = oauth_urls(rt.settings)
    if urls is None:
        return None
    provider = MemhubOAuthProvider(rt, urls)
    routes = create_auth_routes(
        provider, urls.issuer,
        client_registration_options=ClientRegistrationOptions(enabled=True),
        revocation_options=RevocationOptions(enabled=True))
    resource_routes = create_protected_resource_routes(urls.resource, [urls.issuer],
                                                       resource_name="memhub")
    # Clients that look only at the root address (RFC 9728 §3.1 without the path) find the
    # same document there.
    root = resource_routes[0]
    resource_routes.append(Route(ROOT_METADATA_PATH, endpoint=root.app, methods=root.methods))
    for route in [*routes, *resource_routes]:
        bound = urls.resource if route.path == "/token" else None
        app.router.routes.append(Route(route.path, endpoint=Endpoint(route.app, bound),
                                       methods=list(route.methods or [])))

    consent = ConsentPages(operator, provider)

    async def handle(coro: Awaitable[Response]) -> Response:
        try:
            return await coro
        except MemhubError as err:
            logger.warning("oauth page failed", extra={"code": err.code})
            return consent.pages.error(err.http_status, "Unavailable",
                                       f"{err.message}. {err.remedy}")

    async def consent_page(request: Request):
        return await handle(consent.show(request))

    async def consent_login(request: Request):
        return await handle(consent.login(request))

    async def consent_decide(request: Request):
        return await handle(consent.decide(request))

    app.add_api_route("/admin/oauth/consent", consent_page, methods=["GET"],
                      include_in_schema=False)
    app.add_api_route("/admin/oauth/consent", consent_decide, methods=["POST"],
                      include_in_schema=False)
    app.add_api_route("/admin/oauth/login", consent_login, methods=["POST"],
                      include_in_schema=False)
    return urls
