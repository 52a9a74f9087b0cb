"""A token's limits and a namespace's quota on a real server, through a real MCP client and
plain HTTP: requests past a token's in-flight limit or its rate are refused 429 RATE_LIMITED
(Retry-After, a JSON-RPC error the MCP client raises with memhub's code and remedy) while
other tokens go on, and a sequential client never meets them; a write past a quota is the
tool error QUOTA_EXCEEDED with nothing written; limits set with memhub-admin or the
dashboard apply from the next request; stats and /metrics show them."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import psycopg
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import make_settings
from tests.e2e.test_metrics import METRICS_TOKEN, scrape
from tests.integration.test_admin_cli import cli, ok_json
from tests.support import admin as dashboard
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.server import RunningServer, thread_server
from tests.support.wait import until

NS = "acme"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture
def server(db_dsn, tmp_path):
    """Two requests in flight per token by default; one over it waits a moment, then is
    refused."""
    settings = make_settings(db_dsn, tmp_path, metrics_token=METRICS_TOKEN,
                             token_max_in_flight=2, token_queue_wait_seconds=0.2)
    with thread_server(settings) as running:
        yield running


def token_id(dsn: str, token: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT id FROM api_tokens WHERE token_hash = %s",
                            [hashlib.sha256(token.encode()).digest()]).fetchone()[0]


def in_flight(server: RunningServer, tid: int) -> int:
    return server.app.state.runtime.admission.usage(tid)["in_flight"]


@asynccontextmanager
async def held(server: RunningServer, token: str, n: int, tid: int) -> AsyncIterator[None]:
    """`n` requests of `token` in flight until the block ends: each has sent its headers and
    the start of its body, and waits to send the rest."""
    release = asyncio.Event()

    async def body():
        yield b'{"jsonrpc": "2.0", "id": 7, '
        await release.wait()
        yield b'"method": "tools/list"}'

    headers = {**HEADERS, "authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=60) as http:
        requests = [asyncio.create_task(http.post(server.mcp_url, content=body(),
                                                  headers=headers)) for _ in range(n)]

        async def admitted() -> bool:
            return in_flight(server, tid) >= n

        try:
            await until(admitted, what=f"{n} requests in flight")
            yield
        finally:
            release.set()
            answers = await asyncio.gather(*requests)
    assert [a.status_code for a in answers] == [200] * n


async def post(server: RunningServer, token: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(server.mcp_url, json=TOOLS_LIST,
                               headers={**HEADERS, "authorization": f"Bearer {token}"})


def rate_limited(answer: httpx.Response, limit: str) -> dict:
    """memhub's error in a 429's JSON-RPC error, checked."""
    assert answer.status_code == 429, answer.text[:300]
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == -32000
    error = body["error"]["data"]
    assert (error["code"], error["details"]["limit"]) == ("RATE_LIMITED", limit)
    assert error["remedy"] and error["remedy"] in body["error"]["message"]
    assert int(answer.headers["retry-after"]) == error["details"]["retry_after_seconds"] >= 1
    return error


def limit_refusals(samples) -> dict[str, float]:
    return {dict(labels)["reason"]: value for (name, labels), value in samples.items()
            if name == "memhub_limit_refusals_total"}


async def test_the_request_past_a_tokens_in_flight_limit_is_refused_and_others_go_on(
        server, db_dsn):
    busy, other = insert_token(db_dsn, "cursor"), insert_token(db_dsn, "desktop-cli")
    tid = token_id(db_dsn, busy)
    async with server.client(busy) as client, server.client(other) as bystander:
        async with held(server, busy, 2, tid):
            assert rate_limited(await post(server, busy), "in_flight")["details"][
                "max_in_flight"] == 2
            with pytest.raises(MCPError) as refused:
                await client.call_tool("stats", {})
            error = refused.value.data
            assert (error["code"], error["details"]["limit"]) == ("RATE_LIMITED", "in_flight")
            assert error["remedy"] and error["details"]["retry_after_seconds"] == 1
            assert (await call(bystander, "stats", {}))["database"] == "ok"

        async def drained() -> bool:
            return in_flight(server, tid) == 0

        await until(drained, what="the held requests to end")
        shown = await call(client, "stats", {})
    assert shown["limits"] == {"max_in_flight": 2, "in_flight": 1}  # this call
    assert limit_refusals(await scrape(server))["in_flight"] == 2


async def test_a_request_over_the_limit_waits_for_a_slot_and_then_runs(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, token_max_in_flight=1,
                             token_queue_wait_seconds=30)
    token = insert_token(db_dsn, "cursor")
    tid = token_id(db_dsn, token)
    with thread_server(settings) as server:
        admission = server.app.state.runtime.admission
        async with server.client(token) as client:
            async with held(server, token, 1, tid):
                waiting = asyncio.create_task(call(client, "stats", {}))

                async def queued() -> bool:
                    return admission.usage(tid)["queued"] == 1

                await until(queued, what="the call to queue")
            assert (await waiting)["limits"]["in_flight"] == 1


async def test_one_sequential_client_never_meets_its_limit(db_dsn, tmp_path):
    token = insert_token(db_dsn, "cursor")
    settings = make_settings(db_dsn, tmp_path, metrics_token=METRICS_TOKEN,
                             token_max_in_flight=1)
    with thread_server(settings) as server:
        async with server.client(token) as client:
            for i in range(25):
                await call(client, "memory_remember", {"namespace": NS, "content": f"note {i}"})
                await call(client, "memory_search", {"namespace": NS, "query": f"note {i}"})
        assert limit_refusals(await scrape(server)) == {"in_flight": 0, "rate": 0, "quota": 0}


async def test_the_rate_set_on_the_dashboard_refuses_past_the_burst_and_recovers(
        server, db_dsn):
    token = insert_token(db_dsn, "cursor")
    tid = token_id(db_dsn, token)
    with dashboard.browser(server.base_url) as browser:
        csrf = dashboard.logged_in_csrf(browser)
        saved = browser.post(f"/admin/tokens/{tid}/limits", data={
            "csrf": csrf, "max_in_flight": "", "rate_per_minute": "6", "rate_burst": "4"})
        assert saved.status_code == 303
        page = browser.get(saved.headers["location"])
        assert 'id="limit-rate_burst"' in page.text and 'value="4"' in page.text
        refused = browser.post(f"/admin/tokens/{tid}/limits", data={
            "csrf": csrf, "rate_per_minute": "6", "rate_burst": "0"})
        assert refused.status_code == 400 and 'id="action-error"' in refused.text
    # One request back every 10 s: none comes back while the burst is spent.
    async with server.client(token) as client:
        shown = (await call(client, "stats", {}))["limits"]
        assert (shown["rate_per_minute"], shown["rate_burst"]) == (6, 4)
        assert 0 <= shown["rate_available"] < 4  # the handshake and this call took some
        answers = []
        while not answers or answers[-1].status_code == 200:
            answers.append(await post(server, token))
        assert len(answers) <= 4
        assert rate_limited(answers[-1], "rate")["details"]["rate_burst"] == 4
        with pytest.raises(MCPError) as over:
            await client.call_tool("stats", {})
        assert over.value.data["details"]["limit"] == "rate"
        assert (await post(server, insert_token(db_dsn, "web"))).status_code == 200

    async def recovered() -> bool:
        return (await post(server, token)).status_code == 200

    await until(recovered, timeout=30, what="the bucket to refill")
    assert limit_refusals(await scrape(server))["rate"] >= 2


async def test_limits_set_with_memhub_admin_apply_from_the_next_request(server, db_dsn):
    token = insert_token(db_dsn, "cursor")
    tid = token_id(db_dsn, token)
    async with server.client(token) as client:
        set_to_one = ok_json(cli(db_dsn, "token", "limits", str(tid), "--max-in-flight", "1",
                                 "--json"))
        assert set_to_one["limits"] == {"max_in_flight": 1, "rate_per_minute": None,
                                        "rate_burst": None}
        async with held(server, token, 1, tid):
            with pytest.raises(MCPError) as refused:
                await client.call_tool("stats", {})
            assert refused.value.data["details"]["max_in_flight"] == 1
        ok_json(cli(db_dsn, "token", "limits", str(tid), "--max-in-flight", "default",
                    "--json"))
        async with held(server, token, 1, tid):
            assert (await call(client, "stats", {}))["limits"]["max_in_flight"] == 2
    # The defaults shown are the environment's, as the server's would be.
    shown = cli(db_dsn, "token", "limits", str(tid), MEMHUB_TOKEN_MAX_IN_FLIGHT="2")
    assert shown.returncode == 0 and "max_in_flight=2 (default)" in shown.stdout
    bad = cli(db_dsn, "token", "limits", str(tid), "--max-in-flight", "0", "--json")
    assert bad.returncode != 0 and json.loads(bad.stdout)["error"]["code"] == "INVALID_INPUT"


async def test_a_write_past_the_quota_is_a_tool_error_and_writes_nothing(server, db_dsn):
    token = insert_token(db_dsn, "cursor", namespaces=[NS])
    async with server.client(token) as client:
        await call(client, "memory_remember", {"namespace": NS, "content": "The queue is Redis."})
        quota = ok_json(cli(db_dsn, "quota", "set", NS, "--max-memories", "1", "--json"))
        assert (quota["max_memories"], quota["memories"]) == (1, 1)
        before = await call(client, "memory_changes", {"namespace": NS})
        error = await error_of(client, "memory_remember", {"namespace": NS,
                                                           "content": "Deploy on Tuesdays."})
        assert (error["code"], error["details"]["limit"]) == ("QUOTA_EXCEEDED", "memories")
        assert "forget" in error["remedy"].lower()
        after = await call(client, "memory_changes", {"namespace": NS})
        assert after["changes"] == before["changes"]
        stats = await call(client, "stats", {})
    assert stats["namespaces"][NS] == {"ACTIVE": 1}
    assert stats["quotas"][NS]["max_memories"] == 1 and stats["quotas"][NS]["memories"] == 1
    with psycopg.connect(db_dsn) as conn:
        rows = conn.execute("SELECT (SELECT count(*) FROM memories),"
                            " (SELECT count(*) FROM memory_revisions)").fetchone()
    assert rows == (1, 1)  # the jobs are the embedding worker's: tests/integration counts them
    assert limit_refusals(await scrape(server))["quota"] == 1


async def test_the_namespace_page_shows_and_sets_the_quota(server, db_dsn):
    token = insert_token(db_dsn, "cursor")
    async with server.client(token) as client:
        await call(client, "memory_remember", {"namespace": NS, "content": "x" * 40})
        with dashboard.browser(server.base_url) as browser:
            csrf = dashboard.logged_in_csrf(browser)
            opened = browser.get("/admin/namespaces", params={"namespace": NS})
            assert opened.status_code == 303
            page = browser.get(opened.headers["location"])
            assert 'id="use-memories">1<' in page.text and 'id="use-bytes">40<' in page.text
            saved = browser.post(f"/admin/namespaces/{NS}/quota", data={
                "csrf": csrf, "max_memories": "", "max_bytes": "50"})
            assert saved.status_code == 303
            page = browser.get(saved.headers["location"]).text
            assert 'id="quota-bytes">50<' in page and 'id="quota-memories">no limit<' in page
            assert f'data-namespace="{NS}"' in browser.get("/admin").text
            error = await error_of(client, "memory_remember", {"namespace": NS,
                                                               "content": "y" * 11})
            assert (error["code"], error["details"]) == ("QUOTA_EXCEEDED", {
                "limit": "bytes", "max": 50, "used": 40, "adding": 11})
            cleared = browser.post(f"/admin/namespaces/{NS}/quota", data={"csrf": csrf})
            assert cleared.status_code == 303
        await call(client, "memory_remember", {"namespace": NS, "content": "y" * 11})


def test_the_limit_pages_need_a_login_and_their_forms_a_csrf_token(server, db_dsn):
    tid = token_id(db_dsn, insert_token(db_dsn, "cursor"))
    with dashboard.browser(server.base_url) as visitor:
        for page in (f"/admin/tokens/{tid}", f"/admin/namespaces/{NS}"):
            assert visitor.get(page).headers["location"] == "/admin/login"
        assert visitor.post(f"/admin/namespaces/{NS}/quota",
                            data={"max_memories": "0"}).status_code == 403
    with dashboard.browser(server.base_url) as operator:
        csrf = dashboard.logged_in_csrf(operator)
        assert operator.post(f"/admin/tokens/{tid}/limits",
                             data={"max_in_flight": "1"}).status_code == 403
        assert operator.post(f"/admin/namespaces/{NS}/quota",
                             data={"csrf": "forged", "max_memories": "0"}).status_code == 403
        assert operator.get("/admin/tokens/999999").status_code == 404
        assert operator.get("/admin/namespaces/Not%20One").status_code == 400
        assert operator.get("/admin/namespaces", params={"namespace": "<b>"}).status_code == 400
        refused = operator.post(f"/admin/namespaces/{NS}/quota",
                                data={"csrf": csrf, "max_bytes": "lots"})
        assert refused.status_code == 400 and 'id="action-error"' in refused.text
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM namespace_quotas").fetchone()[0] == 0
        assert conn.execute("SELECT max_in_flight FROM api_tokens WHERE id = %s",
                            [tid]).fetchone()[0] is None
