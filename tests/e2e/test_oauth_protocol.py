"""memhub as the OAuth 2.1 authorization server of its own /mcp, over real HTTP: discovery,
registration, consent, code exchange, refresh, and every refusal the MCP authorization
specification and OAuth 2.1 ask for. The operator's consent is posted as the page's own form
(tests/support/oauth.py); tests/e2e/test_oauth_browser.py drives it in Chromium."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp.client.auth.oauth2 import PKCEParameters

from tests.conftest import WEB_TOKEN, make_settings
from tests.support.admin import PASSWORD, csrf_of
from tests.support.oauth import CALLBACK, OAuthFlow, mcp_status, query_of
from tests.support.server import free_port, thread_server


@pytest.fixture(scope="module")
def oauth_server(module_dsn, tmp_path_factory):
    port = free_port()
    # Every test here registers from 127.0.0.1: the per-address limits have a file of their
    # own (test_oauth_registration_limits.py).
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("oauth"), port=port,
                             oauth_registrations_per_hour=1000)
    with thread_server(settings, port=port) as running:
        yield running


@pytest.fixture
def flow(oauth_server):
    flow = OAuthFlow(oauth_server.base_url)
    try:
        yield flow
    finally:
        flow.close()


def audit_actions(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT action FROM admin_audit ORDER BY id")]


# --- discovery and registration ---------------------------------------------------------------
def test_a_401_from_mcp_names_the_protected_resource_metadata(oauth_server, flow):
    response = flow.http.post("/mcp", json={})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
    assert url == f"{oauth_server.base_url}/.well-known/oauth-protected-resource/mcp"


def test_the_metadata_documents_describe_this_server(oauth_server, flow):
    base = oauth_server.base_url
    for path in ("/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-protected-resource"):
        resource = flow.http.get(path).json()
        assert resource["resource"] == f"{base}/mcp"
        assert resource["authorization_servers"] == [base]
    server = flow.http.get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert server["registration_endpoint"] == f"{base}/register"


@pytest.mark.parametrize("uris", [["http://evil.example/cb"], ["javascript:alert(1)"],
                                  ["https://ok.example/cb#frag"],
                                  [f"https://ok.example/{i}" for i in range(11)]])
def test_registration_refuses_redirect_uris_a_code_must_not_reach(flow, uris):
    response = flow.register(redirect_uris=uris)
    assert response.status_code == 400
    assert response.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_registration_accepts_https_and_loopback_redirect_uris(flow):
    response = flow.register(redirect_uris=["https://claude.ai/api/mcp/auth_callback",
                                            "http://localhost:8765/cb", "http://[::1]:9/cb"])
    assert response.status_code == 201, response.text


# --- the happy path and what it leaves alone ------------------------------------------------------
def test_a_consented_token_works_and_static_tokens_still_do(oauth_server, flow, module_dsn):
    _, tokens = flow.connect()
    assert tokens["token_type"].lower() == "bearer"
    assert tokens["access_token"].startswith("mh_")
    assert 0 < tokens["expires_in"] <= 3600
    assert mcp_status(oauth_server.mcp_url, tokens["access_token"]) == 200
    assert mcp_status(oauth_server.mcp_url, WEB_TOKEN) == 200
    assert flow.http.post(f"/mcp?token={WEB_TOKEN}", json={}).status_code != 401
    actions = audit_actions(module_dsn)
    assert "oauth.register" in actions and "oauth.consent" in actions
    assert "oauth.grant" in actions


def test_a_denied_consent_sends_access_denied_and_no_code(flow):
    client = flow.client()
    pkce = PKCEParameters.generate()
    consent_url = flow.authorize(client, pkce).headers["location"]
    denied = flow.consent(consent_url, decision="deny")
    assert denied.status_code == 303
    answer = query_of(denied.headers["location"])
    assert answer["error"] == "access_denied" and answer["state"] == "state-123"
    assert "code" not in answer


async def test_a_token_from_one_namespaces_consent_is_refused_on_another(oauth_server, flow):
    _, tokens = flow.connect(namespaces="alpha")
    transport = StreamableHttpTransport(
        oauth_server.mcp_url, headers={"Authorization": f"Bearer {tokens['access_token']}"})
    async with Client(transport, timeout=60) as client:
        made = await client.call_tool("memory_remember", {
            "namespace": "alpha", "kind": "NOTE", "content": "consented namespace"})
        assert made.structured_content["outcome"] == "created"
        for tool, args in (("memory_list", {"namespace": "beta"}),
                           ("memory_remember", {"namespace": "beta", "kind": "NOTE",
                                                "content": "not mine"})):
            with pytest.raises(ToolError) as err:
                await client.call_tool(tool, args)
            assert json.loads(str(err.value))["code"] == "FORBIDDEN"


async def test_a_refreshed_token_keeps_its_clients_bootstrap_mark(oauth_server, flow):
    """A refresh mints a new access token; the client's next session_bootstrap still reports
    only what changed since its last one, not the namespace's whole history again."""
    client, tokens = flow.connect(namespaces="alpha")

    async def bootstrap(access_token: str, write: str | None = None) -> dict:
        transport = StreamableHttpTransport(
            oauth_server.mcp_url, headers={"Authorization": f"Bearer {access_token}"})
        async with Client(transport, timeout=60) as mcp:
            if write:
                await mcp.call_tool("memory_remember", {
                    "namespace": "alpha", "kind": "NOTE", "content": write})
            return (await mcp.call_tool("session_bootstrap",
                                        {"namespace": "alpha"})).structured_content

    await bootstrap(tokens["access_token"], "before the first bootstrap")
    refreshed = flow.refresh(client, tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    after = await bootstrap(refreshed.json()["access_token"], "after the refresh")
    assert after["changes"]["first_bootstrap"] is False
    assert sum(after["changes"]["counts"].values()) == 1, after["changes"]


# --- refusals ------------------------------------------------------------------------------------
def test_a_wrong_pkce_verifier_is_refused(flow):
    client = flow.client()
    pkce = PKCEParameters.generate()
    code = flow.code(client, pkce)
    wrong = PKCEParameters.generate().code_verifier
    response = flow.exchange(client, code, wrong)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_a_reused_code_is_refused_and_revokes_what_it_issued(oauth_server, flow, module_dsn):
    client = flow.client()
    pkce = PKCEParameters.generate()
    code = flow.code(client, pkce)
    first = flow.exchange(client, code, pkce.code_verifier)
    assert first.status_code == 200
    again = flow.exchange(client, code, pkce.code_verifier)
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"
    assert mcp_status(oauth_server.mcp_url, first.json()["access_token"]) == 401
    refreshed = flow.refresh(client, first.json()["refresh_token"])
    assert refreshed.status_code == 400
    assert "oauth.code_reuse" in audit_actions(module_dsn)


def test_a_redirect_uri_that_was_not_registered_gets_no_redirect(flow):
    client = flow.client()
    response = flow.authorize(client, PKCEParameters.generate(),
                              redirect_uri="http://127.0.0.1:45999/elsewhere")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "location" not in response.headers


def test_the_token_request_must_repeat_the_redirect_uri(flow):
    client = flow.client()
    pkce = PKCEParameters.generate()
    code = flow.code(client, pkce)
    response = flow.token(client, grant_type="authorization_code", code=code,
                          code_verifier=pkce.code_verifier,
                          redirect_uri="http://127.0.0.1:45999/other", resource=flow.resource)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_an_authorization_request_without_state_is_refused(flow):
    client = flow.client()
    response = flow.authorize(client, PKCEParameters.generate(), drop=("state",))
    assert response.status_code == 302
    assert response.headers["location"].startswith(CALLBACK)
    assert query_of(response.headers["location"])["error"] == "invalid_request"


def test_plain_pkce_is_refused(flow):
    client = flow.client()
    pkce = PKCEParameters.generate()
    response = flow.authorize(client, pkce, code_challenge=pkce.code_verifier,
                              code_challenge_method="plain")
    assert response.status_code == 302
    answer = query_of(response.headers["location"])
    assert answer["error"] == "invalid_request"
    assert "code" not in answer and "/admin/oauth/consent" not in response.headers["location"]


def test_an_expired_access_token_is_refused(oauth_server, flow, module_dsn):
    _, tokens = flow.connect()
    assert mcp_status(oauth_server.mcp_url, tokens["access_token"]) == 200
    with psycopg.connect(module_dsn, autocommit=True) as conn:
        conn.execute("UPDATE api_tokens SET expires_at = now() - interval '1 second' "
                     "WHERE token_hash = sha256(convert_to(%s, 'UTF8'))",
                     (tokens["access_token"],))
    assert mcp_status(oauth_server.mcp_url, tokens["access_token"]) == 401


def age_spent_refresh_tokens(dsn: str, seconds: int) -> None:
    """Move every spent refresh token's use `seconds` into the past."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE oauth_refresh_tokens SET used_at = used_at - make_interval("
                     "secs => %s) WHERE used_at IS NOT NULL", [seconds])


def test_two_refreshes_at_once_both_get_the_same_new_pair(oauth_server, flow, module_dsn):
    client, first = flow.connect()
    start = threading.Barrier(2)

    def refresh(_: int) -> httpx.Response:
        with httpx.Client(base_url=oauth_server.base_url, timeout=30) as http:
            start.wait(timeout=30)
            return http.post("/token", data={
                "client_id": client.client_id, "client_secret": client.client_secret,
                "grant_type": "refresh_token", "refresh_token": first["refresh_token"],
                "resource": flow.resource})

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(refresh, range(2)))
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    pairs = {(a.json()["access_token"], a.json()["refresh_token"]) for a in answers}
    assert len(pairs) == 1
    access, refresh_token = pairs.pop()
    assert access != first["access_token"] and refresh_token != first["refresh_token"]
    assert mcp_status(oauth_server.mcp_url, access) == 200
    assert flow.refresh(client, refresh_token).status_code == 200
    assert "oauth.refresh_replay" in audit_actions(module_dsn)


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(oauth_server, flow,
                                                                         module_dsn):
    client, first = flow.connect()
    second = flow.refresh(client, first["refresh_token"])
    assert second.status_code == 200, second.text
    second = second.json()
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    assert mcp_status(oauth_server.mcp_url, second["access_token"]) == 200
    # A retry within the grace period is answered with the same pair, and revokes nothing.
    retried = flow.refresh(client, first["refresh_token"])
    assert retried.status_code == 200, retried.text
    assert (retried.json()["access_token"], retried.json()["refresh_token"]) == \
        (second["access_token"], second["refresh_token"])

    age_spent_refresh_tokens(module_dsn, oauth_server.settings.oauth_refresh_grace_seconds + 1)
    reused = flow.refresh(client, first["refresh_token"])
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    # The whole family is gone: the newest tokens too, not only the stolen one.
    assert mcp_status(oauth_server.mcp_url, second["access_token"]) == 401
    assert flow.refresh(client, second["refresh_token"]).status_code == 400
    actions = audit_actions(module_dsn)
    assert "oauth.refresh" in actions and "oauth.refresh_reuse" in actions


def test_a_token_for_another_resource_is_refused(flow):
    client = flow.client()
    pkce = PKCEParameters.generate()
    other = flow.authorize(client, pkce, resource="https://other.example/mcp")
    assert other.status_code == 302
    assert query_of(other.headers["location"])["error"] == "invalid_target"
    code = flow.code(client, pkce)
    response = flow.exchange(client, code, pkce.code_verifier,
                             resource="https://other.example/mcp")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_target"


def test_a_refresh_for_another_resource_is_refused(flow):
    client, tokens = flow.connect()
    response = flow.refresh(client, tokens["refresh_token"], resource=f"{flow.base_url}/other")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_target"


def test_a_revoked_grant_refuses_its_tokens(oauth_server, flow):
    client, tokens = flow.connect()
    response = flow.http.post("/revoke", data={
        "client_id": client.client_id, "client_secret": client.client_secret,
        "token": tokens["access_token"]})
    assert response.status_code == 200
    assert mcp_status(oauth_server.mcp_url, tokens["access_token"]) == 401
    assert flow.refresh(client, tokens["refresh_token"]).status_code == 400


def test_the_consent_page_asks_for_the_admin_password_and_comes_back(flow):
    client = flow.client()
    consent_url = flow.authorize(client, PKCEParameters.generate()).headers["location"]
    path = consent_url.removeprefix(flow.base_url)
    with httpx.Client(base_url=flow.base_url, follow_redirects=False, timeout=30) as browser:
        page = browser.get(path)  # no /admin session: the login form, not the consent form
        assert page.status_code == 200
        assert 'action="/admin/oauth/login"' in page.text and "consent-form" not in page.text
        form = {"csrf": csrf_of(page.text), "request": query_of(path)["request"]}
        wrong = browser.post("/admin/oauth/login", data={**form, "password": "wrong"})
        assert wrong.status_code == 401 and 'id="login-error"' in wrong.text
        right = browser.post("/admin/oauth/login", data={**form, "password": PASSWORD})
        assert right.status_code == 303
        assert right.headers["location"] == path
        assert "httponly" in right.headers["set-cookie"].lower()
        assert "samesite=strict" in right.headers["set-cookie"].lower()
        assert 'id="consent-form"' in browser.get(path).text


def test_the_consent_form_refuses_a_post_without_its_csrf_token(flow):
    client = flow.client()
    consent_url = flow.authorize(client, PKCEParameters.generate()).headers["location"]
    response = flow.operator.post("/admin/oauth/consent", data={
        "request": query_of(consent_url)["request"], "surface": "web", "scope": "all",
        "decision": "approve"})
    assert response.status_code == 403
    assert "location" not in response.headers
