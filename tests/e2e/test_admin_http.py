"""/admin over real HTTP: login, cookie flags, expiry, tampering, CSRF, backoff, rotation."""

from __future__ import annotations

import json
import re
import time

import httpx
import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.shared.exceptions import MCPError

from memhub.web.sessions import COOKIE_NAME, SESSION_SALT, secret_from_setting
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.admin import (
    act,
    browser,
    confirmed,
    csrf_of,
    fresh_token,
    logged_in_csrf,
    login,
)
from tests.support.oauth import OAuthFlow
from tests.support.server import thread_server

SECRET = "test-session-secret-0123456789-abcdef"


def set_cookie_header(response: httpx.Response) -> str:
    headers = [v for k, v in response.headers.multi_items() if k == "set-cookie"]
    assert len(headers) == 1, headers
    return headers[0]


def mcp_status(server, token: str) -> int:
    """The HTTP status of an MCP initialize with this bearer token."""
    response = httpx.post(
        server.mcp_url,
        headers={"Authorization": f"Bearer {token}",
                 "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "admin-test", "version": "1"}}},
        timeout=30,
    )
    return response.status_code


def active_surface_ids(db_conn, surface):
    return [r[0] for r in db_conn.execute(
        "SELECT id FROM api_tokens WHERE surface = %s AND kind = 'surface'"
        " AND revoked_at IS NULL", [surface]).fetchall()]


# --- login ----------------------------------------------------------------------------------
def test_the_dashboard_redirects_to_login_without_a_session(server):
    with browser(server.base_url) as client:
        response = client.get("/admin")
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"


def test_without_admin_password_every_login_is_refused_with_how_to_set_it(db_dsn, tmp_path,
                                                                           db_conn):
    settings = make_settings(db_dsn, tmp_path, admin_password=None)
    with thread_server(settings) as running, browser(running.base_url) as client:
        page = client.get("/admin/login")
        assert "ADMIN_PASSWORD" in page.text and 'id="not-configured"' in page.text
        refused = client.post("/admin/login", data={"password": "anything"})
        assert refused.status_code == 403 and "ADMIN_PASSWORD" in refused.text
        assert client.get("/admin").status_code == 303
    reasons = db_conn.execute(
        "SELECT detail->>'reason' FROM admin_audit WHERE action = 'login.failure'"
    ).fetchall()
    assert reasons == [("password_unset",)]


def test_a_login_sets_an_httponly_samesite_strict_cookie_without_secure_over_http(server):
    with browser(server.base_url) as client:
        response = login(client)
    assert response.status_code == 303 and response.headers["location"] == "/admin"
    cookie = set_cookie_header(response).lower()
    assert cookie.startswith(f"{COOKIE_NAME}=")
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/admin" in cookie
    assert "max-age=28800" in cookie and "secure" not in cookie


@pytest.fixture
def proxied_server(db_dsn, tmp_path):
    """memhub behind a reverse proxy on loopback (MEMHUB_TRUSTED_PROXIES names it)."""
    settings = make_settings(db_dsn, tmp_path, trusted_proxies=["127.0.0.1"])
    with thread_server(settings) as running:
        yield running


def test_the_cookie_is_secure_when_a_trusted_proxy_says_the_request_came_over_https(
        proxied_server):
    with browser(proxied_server.base_url) as client:
        response = client.get("/admin/login", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert "; secure" in set_cookie_header(response).lower()


def test_x_forwarded_proto_from_a_peer_that_is_not_a_trusted_proxy_is_ignored(server):
    with browser(server.base_url) as client:
        response = client.get("/admin/login", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert "secure" not in set_cookie_header(response).lower()


def test_a_successful_login_is_audited_with_its_source_address(server, db_conn):
    with browser(server.base_url) as client:
        logged_in_csrf(client)
    row = db_conn.execute(
        "SELECT actor, source, at <= now() FROM admin_audit WHERE action = 'login.success'"
    ).fetchone()
    assert row == ("admin", "127.0.0.1", True)


def test_logout_clears_the_cookie_and_the_session(server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = client.post("/admin/logout", data={"csrf": csrf})
        assert response.status_code == 303
        cleared = set_cookie_header(response).lower()
        assert 'max-age=0' in cleared and "httponly" in cleared
        assert client.get("/admin").status_code == 303
    assert db_conn.execute("SELECT count(*) FROM admin_audit WHERE action = 'logout'"
                           ).fetchone() == (1,)


def test_a_copy_of_a_logged_out_cookie_is_refused(server, db_conn):
    """The cookie is signed, not stored: before migration 0012 a copy taken before logout
    (a shared computer, a proxy log) stayed valid until its TTL. Now logout ends the session
    server-side: the copy is signed and unexpired, and still refused, for pages and forms."""
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        copied = client.cookies[COOKIE_NAME]
        assert client.post("/admin/logout", data={"csrf": csrf}).status_code == 303
    with browser(server.base_url, cookies={COOKIE_NAME: copied}) as thief:
        page = thief.get("/admin")
        assert page.status_code == 303 and page.headers["location"].endswith("/admin/login")
        rotate = thief.post("/admin/surfaces/web/rotate", data=confirmed(csrf))
        assert rotate.status_code == 403
    assert db_conn.execute("SELECT count(*) FROM admin_ended_sessions").fetchone() == (1,)
    assert db_conn.execute("SELECT count(*) FROM admin_audit WHERE action LIKE 'token.%'"
                           ).fetchone() == (0,)
    # A new login is a new session: the ended one does not stand in its way.
    with browser(server.base_url) as client:
        logged_in_csrf(client)
        assert client.get("/admin").status_code == 200


def test_pages_are_not_cached_framed_or_scripted_from_elsewhere(server):
    with browser(server.base_url) as client:
        response = client.get("/admin/login")
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert "script-src 'self'" in response.headers["content-security-policy"]


# --- expiry and tampering ----------------------------------------------------------------------
@pytest.fixture
def secret_server(db_dsn, tmp_path):
    with thread_server(make_settings(db_dsn, tmp_path, session_secret=SECRET)) as running:
        yield running


def forged_cookie(*, authed: bool, age_seconds: int) -> str:
    class Past(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - age_seconds

    serializer = URLSafeTimedSerializer(
        secret_from_setting(SECRET), salt=SESSION_SALT, signer=Past
    )
    return serializer.dumps({"sid": "forged-session-id", "authed": authed})


def dashboard_with(base_url: str, cookie: str) -> httpx.Response:
    with browser(base_url, cookies={COOKIE_NAME: cookie}) as client:
        return client.get("/admin")


def test_a_blank_session_secret_is_no_key_so_a_cookie_signed_with_it_is_refused(db_dsn,
                                                                                   tmp_path):
    """sha256("") is a key anyone can compute: a blank MEMHUB_SESSION_SECRET must leave the
    cookies signed with the random key kept in the database."""
    forged = URLSafeTimedSerializer(secret_from_setting(""), salt=SESSION_SALT).dumps(
        {"sid": "forged-session-id", "authed": True})
    with thread_server(make_settings(db_dsn, tmp_path, session_secret="")) as running:
        response = dashboard_with(running.base_url, forged)
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"


def test_a_cookie_within_its_lifetime_is_accepted(secret_server):
    response = dashboard_with(secret_server.base_url, forged_cookie(authed=True, age_seconds=60))
    assert response.status_code == 200


def test_an_expired_cookie_means_logged_out(secret_server):
    ttl = secret_server.settings.admin_session_ttl_seconds
    response = dashboard_with(secret_server.base_url,
                              forged_cookie(authed=True, age_seconds=ttl + 5))
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"


def _tamper(value: str) -> str:
    payload, _, rest = value.partition(".")
    flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
    return f"{flipped}.{rest}"


@pytest.mark.parametrize(
    "cookie",
    [
        _tamper(forged_cookie(authed=True, age_seconds=1)),
        forged_cookie(authed=True, age_seconds=1)[:-3] + "xyz",
        "garbage",
        "x" * 5000,
        URLSafeTimedSerializer(secret_from_setting(SECRET), salt=SESSION_SALT).dumps(["authed"]),
        URLSafeTimedSerializer(secret_from_setting(SECRET), salt="another.purpose").dumps(
            {"sid": "s", "authed": True}
        ),
        URLSafeTimedSerializer(secret_from_setting("other secret"), salt=SESSION_SALT).dumps(
            {"sid": "s", "authed": True}
        ),
    ],
    ids=["payload-flipped", "signature-changed", "garbage", "oversized", "wrong-shape",
         "wrong-salt", "wrong-key"],
)
def test_a_tampered_cookie_means_logged_out_never_a_500(secret_server, cookie):
    response = dashboard_with(secret_server.base_url, cookie)
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"


def test_a_session_survives_a_restart_and_is_valid_on_another_process(settings):
    with thread_server(settings) as first, browser(first.base_url) as client:
        logged_in_csrf(client)
        cookie = client.cookies[COOKIE_NAME]
    with thread_server(settings) as second:
        assert dashboard_with(second.base_url, cookie).status_code == 200


# --- CSRF -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "form_csrf, headers",
    [
        (None, {}),
        ("wrong-token", {}),
        ("other-session", {}),
        ("valid", {"Origin": "https://evil.example"}),
        ("valid", {"Origin": "null"}),
        ("valid", {"Sec-Fetch-Site": "cross-site"}),
        ("valid", {"Sec-Fetch-Site": "same-site"}),
    ],
    ids=["missing-token", "wrong-token", "other-sessions-token", "cross-site-origin",
         "null-origin", "sec-fetch-cross-site", "sec-fetch-same-site"],
)
def test_a_state_change_without_csrf_proof_is_refused_and_changes_nothing(
    server, db_conn, form_csrf, headers
):
    before = active_surface_ids(db_conn, "cursor")
    with browser(server.base_url) as other:
        other_csrf = logged_in_csrf(other)
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        value = {"valid": csrf, "other-session": other_csrf}.get(form_csrf, form_csrf)
        data = {"csrf": value, "confirm": "yes"} if value is not None else {"confirm": "yes"}
        response = client.post("/admin/surfaces/cursor/rotate", data=data, headers=headers)
    assert response.status_code == 403
    assert active_surface_ids(db_conn, "cursor") == before


def test_a_same_origin_form_post_with_its_token_is_accepted(server, db_conn):
    before = active_surface_ids(db_conn, "cursor")
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = client.post(
            "/admin/surfaces/cursor/rotate",
            data=confirmed(csrf),
            headers={"Origin": server.base_url, "Sec-Fetch-Site": "same-origin"},
        )
    assert response.status_code == 303
    assert active_surface_ids(db_conn, "cursor") != before


def test_the_login_form_is_csrf_protected_too(server):
    with browser(server.base_url) as client:
        client.get("/admin/login")
        response = client.post("/admin/login", data={"password": "correct horse battery staple"})
        assert response.status_code == 403
        assert client.get("/admin").status_code == 303


def test_a_post_without_a_login_changes_nothing(server, db_conn):
    before = active_surface_ids(db_conn, "web")
    with browser(server.base_url) as client:
        page = client.get("/admin/login")
        response = client.post("/admin/surfaces/web/rotate", data=confirmed(csrf_of(page.text)))
    assert response.status_code == 303 and response.headers["location"] == "/admin/login"
    assert active_surface_ids(db_conn, "web") == before


# --- backoff ----------------------------------------------------------------------------------
def test_failed_logins_are_slowed_per_client_with_a_growing_retry_after(proxied_server,
                                                                       db_conn):
    server = proxied_server
    with browser(server.base_url) as client:
        statuses = [login(client, "wrong").status_code for _ in range(3)]
        assert statuses == [401, 401, 401]
        # Locked now: even the right password is refused until the lock expires.
        locked = login(client)
        assert locked.status_code == 429
        first_wait = int(locked.headers["retry-after"])
        assert first_wait >= 1
        # Another client address (told by the trusted proxy) is not affected.
        with browser(server.base_url) as elsewhere:
            other = login(elsewhere, headers={"X-Forwarded-For": "192.0.2.44"})
        assert other.status_code == 303
        # Let the lock lapse (in the database, no sleeping) and fail once more: a longer lock.
        db_conn.execute("UPDATE admin_login_failures SET locked_until = now() - interval '1 s'")
        assert login(client, "wrong").status_code == 401
        second = login(client)
        assert second.status_code == 429
        assert int(second.headers["retry-after"]) > first_wait
    reasons = [r[0] for r in db_conn.execute(
        "SELECT detail->>'reason' FROM admin_audit WHERE action = 'login.failure' ORDER BY id"
    )]
    assert reasons == ["bad_password"] * 3 + ["throttled", "bad_password", "throttled"]


def test_a_successful_login_forgives_earlier_failures(server, db_conn):
    with browser(server.base_url) as client:
        assert [login(client, "wrong").status_code for _ in range(2)] == [401, 401]
        assert login(client).status_code == 303
    assert db_conn.execute("SELECT count(*) FROM admin_login_failures").fetchone() == (0,)


# --- confirmation before rotate and revoke ---------------------------------------------------
def _grant(server) -> int:
    """An approved OAuth connection's id (the operator's consent, as tests/support/oauth.py
    gives it)."""
    flow = OAuthFlow(server.base_url)
    try:
        flow.code(flow.client(), PKCEParameters.generate())
    finally:
        flow.close()
    with browser(server.base_url) as client:
        logged_in_csrf(client)
        return int(re.search(r'data-grant-id="(\d+)"', client.get("/admin").text).group(1))


def test_rotate_and_revoke_posted_without_confirmation_ask_and_change_nothing(
        own_port_server, db_conn):
    """The dashboard's CSRF-protected POST alone does not act: it answers the confirmation
    page, whose own form (the same POST with confirm=yes) does."""
    server = own_port_server
    grant = _grant(server)
    token = active_surface_ids(db_conn, "cursor")[0]
    before = db_conn.execute("SELECT count(*) FROM admin_audit").fetchone()
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        for path, title in [("/admin/surfaces/cursor/rotate", "Rotate the cursor token?"),
                            (f"/admin/tokens/{token}/revoke", f"Revoke token {token}?"),
                            (f"/admin/oauth/grants/{grant}/revoke", "Revoke the connection")]:
            for data in ({"csrf": csrf}, {"csrf": csrf, "confirm": "no"}):
                asked = client.post(path, data=data)
                assert asked.status_code == 200 and title in asked.text
                assert f'action="{path}"' in asked.text
                assert 'name="confirm" value="yes"' in asked.text
                assert csrf_of(asked.text) == csrf
            assert client.get(path).text == asked.text  # the page the dashboard's link opens
        assert active_surface_ids(db_conn, "cursor") == [token]
        assert db_conn.execute("SELECT count(*) FROM admin_audit").fetchone()[0] == before[0] + 1
        assert db_conn.execute("SELECT revoked_at FROM oauth_grants WHERE id = %s",
                               [grant]).fetchone() == (None,)
        for path in (f"/admin/oauth/grants/{grant}/revoke", f"/admin/tokens/{token}/revoke"):
            assert client.post(path, data=confirmed(csrf)).status_code == 303
    assert active_surface_ids(db_conn, "cursor") == []
    assert db_conn.execute("SELECT revoked_at IS NOT NULL FROM oauth_grants WHERE id = %s",
                           [grant]).fetchone() == (True,)


def test_a_confirmation_page_needs_a_login_and_names_only_what_can_be_done(server, db_conn):
    with browser(server.base_url) as client:
        anonymous = client.get("/admin/surfaces/cursor/rotate")
        assert anonymous.status_code == 303 and anonymous.headers["location"] == "/admin/login"
        logged_in_csrf(client)
        assert client.get("/admin/surfaces/nobody/rotate").status_code == 404
        assert client.get("/admin/tokens/999999/revoke").status_code == 404
        assert client.get("/admin/oauth/grants/999999/revoke").status_code == 409
        token = active_surface_ids(db_conn, "web")[0]
        db_conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE id = %s", [token])
        assert client.get(f"/admin/tokens/{token}/revoke").status_code == 409


# --- rotation through the dashboard, checked with a real MCP client --------------------------
async def test_after_a_rotation_the_old_token_is_refused_and_the_new_one_accepted(server, db_dsn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = act(client, "/admin/surfaces/web/rotate", confirmed(csrf))
        new = fresh_token(response.text, "web")
        # The card's configs carry the new token, ready to paste.
        assert f"/mcp?token={new}" in response.text
    assert mcp_status(server, WEB_TOKEN) == 401
    with pytest.raises(MCPError):
        async with server.client(WEB_TOKEN) as c:
            await c.call_tool("stats", {})
    assert mcp_status(server, new) == 200
    async with server.client(new) as c:
        result = await c.call_tool("stats", {})
    assert result.structured_content["surface"] == "web"
    async with server.client(new, via="query") as c:
        await c.call_tool("stats", {})


async def test_rotating_one_surface_does_not_disturb_another(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        cursor = fresh_token(
            act(client, "/admin/surfaces/cursor/rotate", confirmed(csrf)).text, "cursor")
        act(client, "/admin/surfaces/web/rotate", confirmed(csrf))
    async with server.client(cursor) as c:
        result = await c.call_tool("stats", {})
    assert result.structured_content["surface"] == "cursor"


def test_a_new_token_is_shown_once_and_only_its_prefix_afterwards(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        new = fresh_token(
            act(client, "/admin/surfaces/desktop-cli/rotate", confirmed(csrf)).text, "desktop-cli"
        )
        later = client.get("/admin").text
    assert new not in later and new[:9] in later
    assert "Bearer &lt;token&gt;" in later


async def test_revoking_a_surface_token_refuses_its_clients(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(client, "/admin/surfaces/cursor/rotate", confirmed(csrf)).text
        token = fresh_token(page, "cursor")
        token_id = re.search(r'href="/admin/tokens/(\d+)/revoke"[^>]*id="revoke-cursor"', page)
        assert token_id
        response = client.post(f"/admin/tokens/{token_id.group(1)}/revoke",
                               data=confirmed(csrf))
        assert response.status_code == 303
        after = client.get(response.headers["location"]).text
        assert "no active token" in after and "Token revoked" in after
    assert mcp_status(server, token) == 401


async def test_a_scoped_token_created_on_the_dashboard_sees_only_its_namespaces(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(
            client, "/admin/tokens",
            {"csrf": csrf, "surface": "cursor", "namespaces": "acme, beta", "access": "read",
             "label": "ci"},
        )
        token = fresh_token(page.text, "created")
        bad = client.post("/admin/tokens", data={"csrf": csrf, "surface": "cursor",
                                                 "namespaces": "Not Valid"})
        assert bad.status_code == 400 and 'id="action-error"' in bad.text
    async with server.client(token) as c:
        result = await c.call_tool("stats", {})
    assert result.structured_content["surface"] == "cursor"
    assert set(result.structured_content["namespaces"]) <= {"acme", "beta"}


def test_actions_are_audited_with_source_and_never_the_token(server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        new = fresh_token(act(client, "/admin/surfaces/web/rotate", confirmed(csrf)).text, "web")
        page = client.get("/admin").text
    rows = db_conn.execute(
        "SELECT action, source FROM admin_audit ORDER BY id").fetchall()
    assert rows == [("login.success", "127.0.0.1"), ("token.rotate", "127.0.0.1")]
    dump = json.dumps(db_conn.execute("SELECT json_agg(a) FROM admin_audit a").fetchone()[0])
    assert new not in dump and WEB_TOKEN not in dump
    assert 'data-action="token.rotate"' in page and 'data-action="login.success"' in page


def test_the_overview_shows_counts_a_server_rendered_chart_and_the_queue(server, db_conn):
    db_conn.execute("SET session_replication_role = replica")
    db_conn.execute(
        "INSERT INTO memories (namespace, kind, content, content_hash, author_client)"
        " VALUES ('acme', 'FACT', 'x', '\\x00', 'cursor') RETURNING id"
    )
    db_conn.execute(
        "INSERT INTO memory_revisions (memory_id, namespace, revision, content, author_client)"
        " SELECT id, namespace, 1, content, author_client FROM memories"
    )
    with browser(server.base_url) as client:
        logged_in_csrf(client)
        page = client.get("/admin").text
    assert "<svg" in page and "<rect" in page and "cursor: 1" in page
    assert '<td><a href="/admin/namespaces/acme">acme</a></td><td>ACTIVE</td><td>1</td>' in page
    assert 'id="embedding-queue"' in page
    assert "<script" not in page.split("</main>")[0]  # nothing inline; only the static file


def test_configs_use_the_public_url_when_set(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, public_url="https://memhub.example.com/")
    with thread_server(settings) as running, browser(running.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(
            client, "/admin/surfaces/cursor/rotate", confirmed(csrf),
            headers={"Origin": "https://memhub.example.com"},
        ).text
    assert '&#34;url&#34;: &#34;https://memhub.example.com/mcp&#34;' in page


def test_the_mcp_gate_still_refuses_a_bad_token_when_admin_is_installed(server):
    assert mcp_status(server, "mh_not_a_token") == 401


def test_an_oversized_form_is_refused_before_it_is_parsed(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = client.post("/admin/tokens", data={"csrf": csrf, "label": "x" * 20_000})
    assert response.status_code == 413


# --- GitHub repositories granted to namespaces ----------------------------------------------
def test_the_dashboard_grants_and_withdraws_a_repository_and_audits_both(server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        allowed = client.post("/admin/github/grants",
                              data={"csrf": csrf, "namespace": "acme", "repo": "Acme/Billing"})
        assert allowed.status_code == 303
        page = client.get(allowed.headers["location"])
        assert 'data-namespace="acme" data-repo="acme/billing"' in page.text
        assert db_conn.execute("SELECT namespace, repo FROM github_repo_grants"
                               ).fetchall() == [("acme", "acme/billing")]
        bad = client.post("/admin/github/grants",
                          data={"csrf": csrf, "namespace": "acme", "repo": "x/.."})
        assert bad.status_code == 400 and 'id="action-error"' in bad.text
        forged = client.post("/admin/github/grants/deny",
                             data={"namespace": "acme", "repo": "acme/billing"})
        assert forged.status_code == 403
        denied = client.post("/admin/github/grants/deny",
                             data={"csrf": csrf, "namespace": "acme", "repo": "acme/billing"})
        assert denied.status_code == 303
        assert 'data-repo="acme/billing"' not in client.get("/admin").text
    assert db_conn.execute("SELECT count(*) FROM github_repo_grants").fetchone() == (0,)
    assert db_conn.execute("SELECT action FROM admin_audit WHERE action LIKE 'github.%'"
                           " ORDER BY id").fetchall() == [("github.allow",), ("github.deny",)]
