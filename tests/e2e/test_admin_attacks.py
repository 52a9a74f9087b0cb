"""Attacks on /admin and the other routes, over real HTTP against a real memhub: guessing the
password in parallel or under forged addresses, foreign Host headers (DNS rebinding), reloading
a page that issued a token, and minting an unscoped token by leaving the namespaces blank."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json

import httpx
import pytest

from memhub.admin.flash import FLASH_COOKIE
from memhub.storage.postgres.operator.admin_sessions import LOGIN_FREE_FAILURES
from tests.conftest import WEB_TOKEN, make_settings
from tests.e2e.test_admin_http import mcp_status
from tests.support.admin import (
    PASSWORD,
    act,
    browser,
    confirmed,
    csrf_of,
    fresh_token,
    logged_in_csrf,
    login,
)
from tests.support.server import thread_server


def audit(db_conn, action: str) -> list[tuple]:
    return db_conn.execute(
        "SELECT source, detail->>'reason' FROM admin_audit WHERE action = %s ORDER BY id",
        [action],
    ).fetchall()


def actions(db_conn, action: str) -> int:
    return db_conn.execute("SELECT count(*) FROM admin_audit WHERE action = %s",
                           [action]).fetchone()[0]


# --- password guessing ----------------------------------------------------------------------
async def test_simultaneous_wrong_passwords_from_one_address_are_evaluated_at_most_three_times(
        server, db_conn):
    """12 guesses fired at once from one address: the lock check and the failure count were
    separate steps, so 5-11 of them reached the password check. Now exactly the free ones do
    (each evaluation is one `bad_password` audit row); every other one is a 429."""
    guesses = 12
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        csrf = csrf_of((await client.get("/admin/login")).text)
        responses = await asyncio.gather(*(
            client.post("/admin/login", data={"csrf": csrf, "password": f"guess {i}"})
            for i in range(guesses)))
    statuses = sorted(r.status_code for r in responses)
    evaluated = [r for r in audit(db_conn, "login.failure") if r[1] == "bad_password"]
    assert len(evaluated) == LOGIN_FREE_FAILURES
    assert statuses == [401] * LOGIN_FREE_FAILURES + [429] * (guesses - LOGIN_FREE_FAILURES)


def test_a_spoofed_x_forwarded_for_from_loopback_does_not_change_the_throttled_address(
        server, db_conn):
    """uvicorn believed X-Forwarded-For from 127.0.0.1 by default: each guess could claim a new
    address and none was throttled (12 of 12 evaluated), and the audit recorded the forged
    addresses. Without MEMHUB_TRUSTED_PROXIES the header is ignored."""
    with browser(server.base_url) as client:
        statuses = [
            login(client, f"guess {i}", headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code
            for i in range(12)
        ]
    assert statuses == [401] * LOGIN_FREE_FAILURES + [429] * (12 - LOGIN_FREE_FAILURES)
    assert {source for source, _ in audit(db_conn, "login.failure")} == {"127.0.0.1"}
    assert db_conn.execute("SELECT source FROM admin_login_failures").fetchall() == [
        ("127.0.0.1",)]


def test_a_trusted_proxy_tells_the_client_address_and_only_it(db_dsn, tmp_path, db_conn):
    settings = make_settings(db_dsn, tmp_path, trusted_proxies=["192.0.2.1"])
    with thread_server(settings) as running, browser(running.base_url) as client:
        # The test client's address, 127.0.0.1, is not the named proxy: headers ignored.
        assert login(client, "wrong", headers={"X-Forwarded-For": "203.0.113.9"}
                     ).status_code == 401
    assert audit(db_conn, "login.failure") == [("127.0.0.1", "bad_password")]


# --- Host header (DNS rebinding) ------------------------------------------------------------
@pytest.mark.parametrize("method, path", [
    ("GET", "/admin/login"),
    ("GET", "/admin"),
    ("POST", "/admin/login"),
    ("GET", "/admin/static/admin.css"),
    ("GET", "/artifact/" + "0" * 64),
    ("POST", "/mcp"),
])
def test_every_route_refuses_a_host_this_server_does_not_answer_to(server, method, path):
    """/mcp refused unknown hosts (fastmcp's guard) while /admin and /artifact answered any."""
    response = httpx.request(method, server.base_url + path, timeout=30,
                             headers={"Host": "rebound.example.com",
                                      "Authorization": f"Bearer {WEB_TOKEN}"})
    assert response.status_code == 421
    error = response.json()["error"]
    assert error["code"] == "FORBIDDEN" and error["details"] == {"host": "rebound.example.com"}
    assert "MEMHUB_ALLOWED_HOSTS" in error["remedy"]
    assert "set-cookie" not in response.headers


def test_healthz_answers_any_host_for_probes_that_call_it_by_address(server):
    response = httpx.get(server.base_url + "/healthz", headers={"Host": "10.1.2.3:8000"},
                         timeout=30)
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_the_dashboard_never_builds_configs_from_a_foreign_host(server):
    """Without MEMHUB_PUBLIC_URL the configs use the Host the dashboard was reached on."""
    with browser(server.base_url) as client:
        logged_in_csrf(client)
        refused = client.get("/admin", headers={"Host": "rebound.example.com"})
        page = client.get("/admin").text
    assert refused.status_code == 421 and "rebound.example.com/mcp" not in refused.text
    assert f"{server.base_url}/mcp" in page


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:{port}", "[::1]:{port}",
                                  "memhub.internal", "node-7.memhub.internal:443"])
def test_loopback_names_and_allowed_hosts_are_answered(db_dsn, tmp_path, host):
    settings = make_settings(db_dsn, tmp_path,
                             allowed_hosts=["memhub.internal", "*.memhub.internal"])
    with thread_server(settings) as running:
        port = running.base_url.rsplit(":", 1)[1]
        response = httpx.get(running.base_url + "/admin/login",
                             headers={"Host": host.format(port=port)}, timeout=30)
    assert response.status_code == 200


# --- POST-redirect-GET: a reload never repeats the action ------------------------------------
def rotations(db_conn, surface: str) -> int:
    return db_conn.execute(
        "SELECT count(*) FROM admin_audit WHERE action = 'token.rotate'"
        " AND detail->>'surface' = %s", [surface]).fetchone()[0]


async def test_reloading_the_page_after_a_rotation_neither_rotates_again_nor_shows_the_token(
        server, db_conn):
    """The rotation's POST answered with the page showing the new token; reloading it (F5)
    posted again, rotated again and revoked the token just shown."""
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = client.post("/admin/surfaces/cursor/rotate", data=confirmed(csrf))
        assert response.status_code == 303 and response.headers["location"] == "/admin"
        shown = client.get("/admin")
        token = fresh_token(shown.text, "cursor")
        assert token not in response.text and token not in response.headers["location"]
        reloaded = client.get("/admin")
    assert reloaded.status_code == 200 and token not in reloaded.text
    assert rotations(db_conn, "cursor") == 1
    assert mcp_status(server, token) == 200


def test_reloading_the_page_after_creating_a_token_creates_no_second_one(server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(client, "/admin/tokens",
                   {"csrf": csrf, "surface": "cursor", "namespaces": "acme"})
        token = fresh_token(page.text, "created")
        assert token not in client.get("/admin").text
    assert actions(db_conn, "token.create") == 1


def test_the_token_between_post_and_get_is_neither_in_the_cookie_nor_in_the_database(
        server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        client.post("/admin/surfaces/web/rotate", data=confirmed(csrf))
        cookie = client.cookies[FLASH_COOKIE]
        stored = db_conn.execute("SELECT json_agg(f)::text FROM admin_flash f").fetchone()[0]
        token = fresh_token(client.get("/admin").text, "web")
    payload = json.loads(base64.urlsafe_b64decode(cookie.split(".")[0] + "=="))
    masked = base64.urlsafe_b64decode(payload["masked"])
    assert token not in cookie and token.encode() != masked
    assert stored and token not in stored
    assert hashlib.sha256(token.encode()).hexdigest() not in stored
    assert db_conn.execute("SELECT count(*) FROM admin_flash").fetchone() == (0,)  # read once


def test_a_copy_of_the_flash_cookie_shows_nothing_once_the_token_was_shown(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        client.post("/admin/surfaces/web/rotate", data=confirmed(csrf))
        copied = client.cookies[FLASH_COOKIE]
        token = fresh_token(client.get("/admin").text, "web")
        client.cookies.set(FLASH_COOKIE, copied, path="/admin")
        again = client.get("/admin")
    assert again.status_code == 200 and token not in again.text


def test_a_flash_cookie_shows_nothing_to_another_session(server):
    with browser(server.base_url) as mine, browser(server.base_url) as other:
        csrf = logged_in_csrf(mine)
        logged_in_csrf(other)
        mine.post("/admin/surfaces/web/rotate", data=confirmed(csrf))
        other.cookies.set(FLASH_COOKIE, mine.cookies[FLASH_COOKIE], path="/admin")
        assert 'id="fresh-token-web"' not in other.get("/admin").text
        # Still there for the session that rotated.
        assert fresh_token(mine.get("/admin").text, "web").startswith("mh_")


@pytest.mark.parametrize("cookie", ["garbage", "x" * 5000, "e30.AAAA.BBBB"])
def test_a_forged_flash_cookie_shows_nothing_and_is_cleared(server, cookie):
    with browser(server.base_url) as client:
        logged_in_csrf(client)
        client.cookies.set(FLASH_COOKIE, cookie, path="/admin")
        page = client.get("/admin")
    assert page.status_code == 200 and 'id="fresh-token-' not in page.text
    assert f'{FLASH_COOKIE}=""' in page.headers["set-cookie"]


# --- no unscoped token by accident -----------------------------------------------------------
def scoped_tokens(db_conn) -> list[tuple]:
    return db_conn.execute(
        "SELECT namespaces FROM api_tokens WHERE kind = 'scoped' ORDER BY id").fetchall()


@pytest.mark.parametrize("form", [
    {"namespaces": ""},
    {"namespaces": "  ,  "},
    {"namespaces": "", "scope": "namespaces"},
    {"namespaces": "acme", "scope": "all"},
], ids=["blank", "separators-only", "blank-with-these-namespaces", "names-and-all"])
def test_the_dashboard_never_turns_a_blank_namespace_field_into_every_namespace(
        server, db_conn, form):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        response = client.post("/admin/tokens", data={"csrf": csrf, "surface": "cursor", **form})
    assert response.status_code == 400 and 'id="action-error"' in response.text
    assert scoped_tokens(db_conn) == []


async def test_every_namespace_is_an_explicit_choice_on_the_dashboard(server, db_conn):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(client, "/admin/tokens",
                   {"csrf": csrf, "surface": "cursor", "namespaces": "", "scope": "all"})
        token = fresh_token(page.text, "created")
        assert "all namespaces" in page.text
    assert scoped_tokens(db_conn) == [(None,)]
    async with server.client(token) as c:
        assert (await c.call_tool("stats", {})).structured_content["surface"] == "cursor"


def test_a_login_on_a_foreign_host_is_refused_before_anything_is_counted(server, db_conn):
    """A rebinding page cannot guess through the victim's browser, nor lock the operator's
    own address out by failing on purpose."""
    response = httpx.post(server.base_url + "/admin/login", data={"password": PASSWORD},
                          headers={"Host": "rebound.example.com"}, timeout=30)
    assert response.status_code == 421
    assert db_conn.execute("SELECT count(*) FROM admin_audit").fetchone() == (0,)
    assert db_conn.execute("SELECT count(*) FROM admin_login_failures").fetchone() == (0,)
