"""The operator's journey through /admin in real headless Chromium (Debian's package, driven by
Playwright; no browser is ever downloaded).

Plain sync tests: Playwright's sync API refuses to run inside a running asyncio loop.
"""

from __future__ import annotations

import json

import httpx
import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.support.admin import PASSWORD

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium, server):
    context = chromium.new_context(base_url=server.base_url)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.base_url)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        yield page
    finally:
        context.close()


def log_in(page: Page, password: str = PASSWORD) -> None:
    page.goto("/admin")
    expect(page).to_have_url("/admin/login".join([page.url.split("/admin")[0], ""]))
    page.fill("#password", password)
    page.click("#login-button")


def call_stats(mcp_url: str, headers: dict[str, str]) -> httpx.Response:
    """A real MCP exchange over HTTP: initialize, then tools/call stats."""
    base = {"Accept": "application/json, text/event-stream", **headers}
    init = httpx.post(mcp_url, headers=base, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "browser-test", "version": "1"}}})
    if init.status_code != 200:
        return init
    return httpx.post(mcp_url, headers=base, timeout=30, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "stats", "arguments": {}}})


def test_log_in_rotate_copy_the_config_and_the_new_token_works(page, server):
    log_in(page)
    expect(page.locator("#card-cursor")).to_be_visible()
    page.click("#rotate-cursor")
    page.click("#confirm-button")
    expect(page.locator("#fresh-token-cursor")).to_be_visible()
    fresh = page.inner_text("#fresh-token-cursor").strip()

    # Copy with the button (the optional script), then read what the operator would paste.
    page.click("button[data-copy='card-cursor-cursor']")
    expect(page.locator("button[data-copy='card-cursor-cursor']")).to_have_text("Copied")
    pasted = page.evaluate("navigator.clipboard.readText()")
    assert pasted == page.inner_text("#card-cursor-cursor")
    config = json.loads(pasted)["mcpServers"]["memhub"]
    assert config["url"] == server.mcp_url
    assert config["headers"]["Authorization"] == f"Bearer {fresh}"

    response = call_stats(config["url"], config["headers"])
    assert response.status_code == 200
    assert response.json()["result"]["structuredContent"]["surface"] == "cursor"

    # Shown once: a reload shows only the prefix and the placeholder.
    page.goto("/admin")
    assert fresh not in page.content()
    assert "Bearer <token>" in page.inner_text("#card-cursor-cursor")


def test_the_web_card_gives_a_connector_url_that_works_as_pasted(page, server):
    log_in(page)
    page.click("#rotate-web")
    page.click("#confirm-button")
    url = page.inner_text("#card-web-claude-web").strip()
    assert url.startswith(server.mcp_url + "?token=mh_")
    assert call_stats(url, {}).status_code == 200


def test_the_claude_code_command_carries_the_new_token(page, server):
    log_in(page)
    page.click("#rotate-desktop-cli")
    page.click("#confirm-button")
    fresh = page.inner_text("#fresh-token-desktop-cli").strip()
    command = page.inner_text("#card-desktop-cli-claude-code")
    assert command == (f"claude mcp add --transport http memhub {server.mcp_url} "
                       f'--header "Authorization: Bearer {fresh}"')
    desktop = json.loads(page.inner_text("#card-desktop-cli-claude-desktop"))
    assert desktop["mcpServers"]["memhub"]["args"] == [
        "-y", "mcp-remote", server.mcp_url, "--header", "Authorization:${AUTH_HEADER}"]
    assert desktop["mcpServers"]["memhub"]["env"] == {"AUTH_HEADER": f"Bearer {fresh}"}


def test_revoke_a_surface_token(page, server):
    log_in(page)
    page.click("#rotate-cursor")
    page.click("#confirm-button")
    fresh = page.inner_text("#fresh-token-cursor").strip()
    page.click("#revoke-cursor")
    page.click("#confirm-button")
    expect(page.locator("#notice")).to_contain_text("Token revoked")
    expect(page.locator("#card-cursor .status")).to_contain_text("no active token")
    assert call_stats(server.mcp_url, {"Authorization": f"Bearer {fresh}"}).status_code == 401
    expect(page.locator("#audit tr[data-action='token.revoke']")).to_have_count(1)


def test_rotate_and_revoke_ask_first_and_cancel_changes_nothing(page, server, db_conn):
    log_in(page)
    before = page.inner_text("#card-cursor .status")
    page.click("#rotate-cursor")
    expect(page.locator("#confirm h1")).to_have_text("Rotate the cursor token?")
    expect(page.locator("#confirm-facts")).to_contain_text("cursor")
    expect(page.locator("#confirm-consequence")).to_contain_text("refused")
    page.click("#cancel-link")
    page.click("#revoke-cursor")
    expect(page.locator("#confirm h1")).to_contain_text("Revoke token")
    page.go_back()
    expect(page.locator("#card-cursor .status")).to_have_text(before)
    assert db_conn.execute("SELECT count(*) FROM admin_audit WHERE action LIKE 'token.%'"
                           ).fetchone() == (0,)
    # Confirmed, the same two links act.
    page.click("#revoke-cursor")
    page.click("#confirm-button")
    expect(page.locator("#card-cursor .status")).to_contain_text("no active token")
    page.click("#rotate-cursor")
    expect(page.locator("#confirm-facts")).to_contain_text("none (revoked)")
    page.click("#confirm-button")
    expect(page.locator("#fresh-token-cursor")).to_be_visible()


def test_create_a_read_only_project_scoped_token(page, server):
    log_in(page)
    page.fill("#create-surface", "cursor")
    page.fill("#create-namespaces", "acme-billing, acme-web")
    page.fill("#create-label", "ci reader")
    page.check("#create-read-only")
    page.click("#create-button")
    expect(page.locator("#created-token")).to_contain_text("read-only")
    token = page.inner_text("#fresh-token-created").strip()
    response = call_stats(server.mcp_url, {"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    row = page.locator("#extra-tokens tbody tr").first
    expect(row).to_contain_text("acme-billing, acme-web")
    expect(row).to_contain_text("read")
    assert token not in page.inner_text("#extra-tokens")


def test_create_a_core_tool_profile_token(page, server):
    log_in(page)
    page.fill("#create-surface", "cursor")
    page.fill("#create-namespaces", "acme-web")
    page.check("#create-tools-core")
    page.click("#create-button")
    expect(page.locator("#created-token")).to_contain_text("tools: core")
    token = page.inner_text("#fresh-token-created").strip()
    expect(page.locator("#extra-tokens tbody tr").first.locator(".tool-profile")).to_have_text(
        "core")
    refused = call_stats(server.mcp_url, {"Authorization": f"Bearer {token}"})
    assert refused.status_code == 200 and "TOOL_NOT_IN_PROFILE" in refused.text


def test_reloading_the_page_after_a_rotation_keeps_the_token_just_shown(page, server, db_conn):
    """The rotation's answer was the POST itself: a reload (F5) rotated again and revoked the
    token on screen. Now the POST redirects to /admin and a reload is a plain GET."""
    log_in(page)
    page.click("#rotate-cursor")
    page.click("#confirm-button")
    fresh = page.inner_text("#fresh-token-cursor").strip()
    assert page.url == server.base_url + "/admin"
    page.reload()
    expect(page.locator("#card-cursor")).to_be_visible()
    assert fresh not in page.content()
    assert call_stats(server.mcp_url, {"Authorization": f"Bearer {fresh}"}).status_code == 200
    assert db_conn.execute("SELECT count(*) FROM admin_audit WHERE action = 'token.rotate'"
                           ).fetchone() == (1,)


def test_a_blank_namespace_field_is_refused_and_every_namespace_is_a_choice(page, db_conn):
    log_in(page)
    page.fill("#create-surface", "cursor")
    page.click("#create-button")
    expect(page.locator("#action-error")).to_be_visible()
    assert db_conn.execute("SELECT count(*) FROM api_tokens WHERE kind = 'scoped'"
                           ).fetchone() == (0,)
    page.check("#create-scope-all")
    page.click("#create-button")
    expect(page.locator("#created-token")).to_contain_text("all namespaces")
    assert db_conn.execute("SELECT namespaces FROM api_tokens WHERE kind = 'scoped'"
                           ).fetchall() == [(None,)]


def test_log_out(page):
    log_in(page)
    expect(page.locator("#logout-button")).to_be_visible()
    page.click("#logout-button")
    expect(page.locator("#notice")).to_contain_text("Logged out")
    page.goto("/admin")
    expect(page.locator("#password")).to_be_visible()


def test_a_wrong_password_is_refused_and_recorded(page, db_conn):
    log_in(page, "not the password")
    expect(page.locator("#login-error")).to_contain_text("Wrong password")
    page.goto("/admin")
    expect(page.locator("#password")).to_be_visible()
    assert db_conn.execute(
        "SELECT count(*) FROM admin_audit WHERE action = 'login.failure'"
    ).fetchone() == (1,)


def test_everything_works_without_javascript(chromium, server):
    context = chromium.new_context(base_url=server.base_url, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page)
        page.click("#rotate-web")
        page.click("#confirm-button")
        fresh = page.inner_text("#fresh-token-web").strip()
        assert call_stats(server.mcp_url, {"Authorization": f"Bearer {fresh}"}).status_code == 200
        # The copy buttons need the script; without it they stay hidden, the text is there.
        expect(page.locator("button[data-copy]").first).to_be_hidden()
        page.click("#logout-button")
        expect(page.locator("#password")).to_be_visible()
    finally:
        context.close()


# --- how every page looks: 1280 and 390 pixels wide ---------------------------------------------
WIDTHS = {"desktop": 1280, "phone": 390}

LAYOUT = """() => {
  const doc = document.documentElement;
  const overflow = [...document.querySelectorAll('body *')]
    .filter(el => el.closest('.scroll') === null)
    .filter(el => { const r = el.getBoundingClientRect();
                    return r.width > 0 && (r.right > doc.clientWidth + 1 || r.left < -1); })
    .map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
               + (el.className && typeof el.className === 'string' ? '.' + el.className : ''));
  const radios = [...document.querySelectorAll('input[type=radio]')].map(radio => {
    const label = radio.closest('label');
    const text = [...label.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
    const range = document.createRange();
    range.selectNodeContents(text);
    const first = range.getClientRects()[0];
    const box = radio.getBoundingClientRect();
    return {id: radio.id || radio.value, right: box.right, left: first.left,
            middle: (box.top + box.bottom) / 2, top: first.top, bottom: first.bottom};
  });
  return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, overflow, radios};
}"""


def _pages(page: Page, server) -> list[tuple[str, str]]:
    """(name, path) of every dashboard page, with something in each of its tables."""
    from mcp.client.auth.oauth2 import PKCEParameters

    from tests.support.oauth import OAuthFlow

    log_in(page)
    page.fill("#create-surface", "cursor")
    page.fill("#create-namespaces", "acme-billing, acme-web, acme-infrastructure-platform")
    page.fill("#create-label", "ci reader for the nightly reconciliation job")
    page.click("#create-button")
    token_id = page.locator("#extra-tokens tbody tr").first.get_attribute("data-token-id")
    flow = OAuthFlow(server.base_url)
    try:
        client = flow.client()
        flow.code(client, PKCEParameters.generate())  # an approved connection
        consent = flow.authorize(client, PKCEParameters.generate()).headers["location"]
    finally:
        flow.close()
    page.goto("/admin")
    grant_id = page.locator("#oauth-grants tr[data-grant-id]").first.get_attribute(
        "data-grant-id")
    return [("dashboard", "/admin"), ("rotate", "/admin/surfaces/desktop-cli/rotate"),
            ("revoke-token", f"/admin/tokens/{token_id}/revoke"),
            ("revoke-grant", f"/admin/oauth/grants/{grant_id}/revoke"),
            ("consent", consent.removeprefix(server.base_url)),
            ("activity", "/admin/namespaces/acme-infrastructure-platform/activity"),
            ("error", "/admin/tokens/999999/revoke"), ("login", "/admin/login")]


def test_every_page_fits_the_window_at_1280_and_390_pixels_wide(chromium, own_port_server,
                                                                  tmp_path):
    """Screenshots of every page at both widths are kept in the test's directory. On each:
    nothing sticks out of the window (wide tables scroll inside their own box), and every
    radio button sits on the line of its words, to their left."""
    server = own_port_server
    context = chromium.new_context(base_url=server.base_url)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        _check_every_page(page, server, tmp_path)
    finally:
        context.close()


def _check_every_page(page: Page, server, tmp_path) -> None:
    pages = _pages(page, server)
    for width_name, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        for name, path in pages:
            if name == "login":  # the last page: seen logged out, then back in
                page.goto("/admin")
                page.click("#logout-button")
            page.goto(path)
            page.screenshot(path=tmp_path / f"{name}-{width_name}.png", full_page=True)
            layout = page.evaluate(LAYOUT)
            where = f"{name} at {width}px"
            assert layout["scrollWidth"] <= layout["clientWidth"], (where, layout["overflow"])
            assert layout["overflow"] == [], where
            for radio in layout["radios"]:
                assert radio["right"] <= radio["left"], (where, radio)
                assert radio["top"] <= radio["middle"] <= radio["bottom"], (where, radio)
            if name == "login":
                log_in(page)
    shots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(shots) == len(pages) * len(WIDTHS), shots

