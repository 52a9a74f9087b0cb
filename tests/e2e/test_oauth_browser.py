"""The official MCP Python SDK's OAuth client (`OAuthClientProvider`) connects to a running
memhub the way claude.ai's connector does: a 401 from /mcp, discovery, dynamic registration,
the operator's login and consent in real headless Chromium (Debian's /usr/bin/chromium driven
by Playwright; no browser is downloaded), the code exchange, tool calls, a refresh, and the
refusal of its tokens once the operator revokes the connection on the dashboard.

Playwright's async API: the SDK client is async and runs in the same event loop.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import psycopg
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.client.auth.oauth2 import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import async_playwright, expect

from tests.conftest import make_settings
from tests.support.admin import PASSWORD
from tests.support.oauth import mcp_status, query_of
from tests.support.server import free_port, thread_server

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CLIENT_NAME = "SDK e2e client"


class MemoryTokenStorage:
    """The SDK's TokenStorage protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@pytest.fixture
def oauth_server(db_dsn, tmp_path):
    port = free_port()
    with thread_server(make_settings(db_dsn, tmp_path, port=port), port=port) as running:
        yield running


async def test_the_sdk_oauth_client_connects_refreshes_and_is_refused_once_revoked(
        oauth_server, db_dsn):
    callback = f"http://127.0.0.1:{free_port()}/callback"
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = await (await browser.new_context()).new_page()
            page.set_default_timeout(20_000)
            arrived: asyncio.Queue[str] = asyncio.Queue()

            async def at_callback(route) -> None:
                # The client's loopback listener: the browser is sent here with the code.
                arrived.put_nowait(route.request.url)
                await route.fulfill(status=200, body="connected", content_type="text/plain")

            await page.route(callback + "*", at_callback)

            async def redirect_handler(authorization_url: str) -> None:
                await page.goto(authorization_url)
                await page.fill("#password", PASSWORD)  # the /admin password, on the way
                await page.click("#login-button")
                await expect(page.locator("#client-name")).to_have_text(CLIENT_NAME)
                await page.fill("#consent-namespaces", "alpha")
                await page.check("#consent-read-write")
                await page.click("#consent-approve")

            async def callback_handler() -> AuthorizationCodeResult:
                answer = query_of(await asyncio.wait_for(arrived.get(), timeout=30))
                return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"),
                                               iss=answer.get("iss"))

            storage = MemoryTokenStorage()
            auth = OAuthClientProvider(
                server_url=oauth_server.mcp_url,
                client_metadata=OAuthClientMetadata(
                    client_name=CLIENT_NAME, redirect_uris=[callback],
                    grant_types=["authorization_code", "refresh_token"],
                    response_types=["code"]),
                storage=storage, redirect_handler=redirect_handler,
                callback_handler=callback_handler)

            transport = StreamableHttpTransport(oauth_server.mcp_url, auth=auth)
            async with Client(transport, timeout=60) as client:
                made = await client.call_tool("memory_remember", {
                    "namespace": "alpha", "kind": "DECISION",
                    "content": "Connected over OAuth from the SDK client."})
                assert made.structured_content["outcome"] == "created"
                first = storage.tokens
                # The SDK refreshes before a request once it believes the token expired.
                auth.context.token_expiry_time = time.time() - 1
                listed = await client.call_tool("memory_list", {"namespace": "alpha"})
                assert listed.structured_content is not None
                second = storage.tokens
            assert second.access_token != first.access_token
            assert second.refresh_token != first.refresh_token
            assert mcp_status(oauth_server.mcp_url, second.access_token) == 200

            # The operator revokes the connection on the dashboard (still logged in).
            await page.goto(f"{oauth_server.base_url}/admin")
            row = page.locator("#oauth-grants tr[data-grant-id]",
                               has=page.locator(".client-name", has_text=CLIENT_NAME))
            grant_id = await row.get_attribute("data-grant-id")
            await page.click(f"#revoke-grant-{grant_id}")
            await expect(page.locator("#confirm-facts")).to_contain_text(CLIENT_NAME)
            await page.click("#confirm-button")
            await expect(page.locator(f"#grant-{grant_id} .state")).to_contain_text("revoked")
        finally:
            await browser.close()

    assert mcp_status(oauth_server.mcp_url, second.access_token) == 401
    info = storage.client_info
    refused = httpx.post(f"{oauth_server.base_url}/token", timeout=30, data={
        "grant_type": "refresh_token", "refresh_token": second.refresh_token,
        "client_id": info.client_id, "client_secret": info.client_secret})
    assert refused.status_code == 400
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        actions = [r[0] for r in conn.execute("SELECT action FROM admin_audit ORDER BY id")]
    for action in ("oauth.register", "oauth.consent", "oauth.grant", "oauth.refresh",
                   "oauth.revoke"):
        assert action in actions
