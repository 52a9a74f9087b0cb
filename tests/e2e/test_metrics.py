"""GET /metrics on a real server, read as a Prometheus scraper reads it, after real MCP calls:
what is counted, who may read it, and that no label can take a namespace, a token or any other
value a client chooses."""

from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memhub.errors import MemhubError
from memhub.metrics import JOBS, LIMIT_REFUSALS, OTHER_ROUTE, REFUSALS, ROUTES, UNKNOWN_TOOL
from memhub.storage.activity import DROPPED_REASONS
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.server import thread_server
from tests.unit.test_documented import tool_names

METRICS_TOKEN = "scrape-secret-3c9e1f0a7b5d4286"
MISSING = "00000000-0000-4000-8000-000000000000"
ACCEPT = {"accept": "application/json, text/event-stream"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def settings(db_dsn, tmp_path):
    return make_settings(db_dsn, tmp_path, metrics_token=METRICS_TOKEN)


@contextmanager
def server_with(db_dsn, tmp_path, **overrides):
    with thread_server(make_settings(db_dsn, tmp_path, **overrides)) as running:
        yield running


async def get_metrics(server, token: str | None = METRICS_TOKEN, **headers: str
                      ) -> httpx.Response:
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.get(f"{server.base_url}/metrics", headers=headers)


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(server) -> Samples:
    answer = await get_metrics(server)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return parse(answer.text)


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def scrape_until(server, ready, timeout: float = 30.0) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        samples = await scrape(server)
        if ready(samples) or time.monotonic() > deadline:
            return samples
        await asyncio.sleep(0.1)


async def test_tool_calls_are_counted_by_tool_outcome_and_code_and_timed(server, tokens):
    async with server.client(tokens["cursor"]) as client:
        await call(client, "memory_remember", {"namespace": "acme", "content": "Use UTC."})
        missing = await error_of(client, "memory_get", {"namespace": "acme", "id": MISSING})
    assert missing["code"] == "NOT_FOUND"
    samples = await scrape(server)
    calls = "memhub_tool_calls_total"
    assert value(samples, calls, tool="memory_remember", outcome="ok", code="OK") == 1
    assert value(samples, calls, tool="memory_get", outcome="error", code="NOT_FOUND") == 1
    assert value(samples, calls, tool="memory_get", outcome="ok", code="OK") is None
    timed = "memhub_tool_duration_seconds"
    for tool in ("memory_remember", "memory_get"):
        assert value(samples, f"{timed}_count", tool=tool) == 1
        assert value(samples, f"{timed}_sum", tool=tool) > 0
        assert value(samples, f"{timed}_bucket", tool=tool, le="+Inf") == 1


async def test_a_tool_name_the_server_does_not_offer_counts_as_unknown(server, tokens):
    invented = "exfiltrate_zq81"
    async with server.client(tokens["cursor"]) as client:
        refused = await error_of(client, invented, {"namespace": "acme"})
    assert refused["code"] == "NOT_FOUND"
    answer = await get_metrics(server)
    assert invented not in answer.text
    samples = parse(answer.text)
    assert value(samples, "memhub_tool_calls_total", tool=UNKNOWN_TOOL, outcome="error",
                 code="NOT_FOUND") == 1


async def test_http_requests_are_counted_by_route_and_status_and_refusals_by_reason(server):
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(f"{server.base_url}/healthz")).status_code == 200
        assert (await http.get(f"{server.base_url}/no/such/page")).status_code == 404
        assert (await http.post(server.mcp_url, headers=ACCEPT, json={})).status_code == 401
        wrong = {**ACCEPT, "authorization": "Bearer mh_not_a_real_token_0123456789"}
        assert (await http.post(server.mcp_url, headers=wrong, json={})).status_code == 401
    samples = await scrape(server)
    http_total = "memhub_http_requests_total"
    assert value(samples, http_total, route="/healthz", status="200") >= 1
    assert value(samples, http_total, route=OTHER_ROUTE, status="404") == 1
    assert value(samples, http_total, route="/mcp", status="401") == 2
    assert value(samples, "memhub_http_request_duration_seconds_count", route="/mcp") == 2
    refusals = "memhub_auth_refusals_total"
    assert value(samples, refusals, reason="missing") == 1
    assert value(samples, refusals, reason="invalid") == 1
    assert value(samples, refusals, reason="rate_limited") == 0
    # The scrape itself is counted once its answer is sent: the next scrape shows it.
    again = await scrape(server)
    assert value(again, http_total, route="/metrics", status="200") >= 1


async def test_the_pool_is_described_by_gauges(server):
    samples = await scrape(server)
    size = value(samples, "memhub_pool_size")
    idle = value(samples, "memhub_pool_idle")
    assert size >= 1 and 0 <= idle <= size
    assert value(samples, "memhub_pool_in_use") == size - idle
    assert value(samples, "memhub_pool_waiting") == 0
    assert value(samples, "memhub_pool_max") == server.settings.pool_max_size
    assert value(samples, "memhub_pool_requests_total") >= 1


async def test_the_queue_depth_and_oldest_due_age_reflect_queued_jobs(db_dsn, tmp_path):
    with server_with(db_dsn, tmp_path, metrics_token=METRICS_TOKEN,
                     embed_worker=False) as running:
        async with running.client(WEB_TOKEN) as client:
            await call(client, "memory_remember", {"namespace": "acme", "content": "Use UTC."})
            await call(client, "memory_remember", {"namespace": "acme",
                                                   "content": "Deploys go out on Tuesdays."})
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("UPDATE embedding_jobs SET run_after = now() - interval '1 hour'"
                         " WHERE id = (SELECT min(id) FROM embedding_jobs)")
        samples = await scrape(running)
    assert value(samples, "memhub_embedding_queue_pending") == 2
    assert value(samples, "memhub_embedding_queue_due") == 2
    assert 3600 <= value(samples, "memhub_embedding_queue_oldest_due_seconds") < 3700


async def test_a_storm_of_scrapes_reads_the_queue_once(server):
    answers = await asyncio.gather(*(get_metrics(server) for _ in range(20)))
    assert {a.status_code for a in answers} == {200}
    assert server.app.state.runtime.metrics.queue.reads == 1


async def test_background_jobs_count_their_runs(server):
    runs = "memhub_job_runs_total"
    busy = ("expiry_sweep", "lexicon_refresh", "embedding_worker")
    samples = await scrape_until(
        server, lambda s: all((value(s, runs, job=job) or 0) >= 1 for job in busy))
    for job in busy:
        assert value(samples, runs, job=job) >= 1
        assert value(samples, "memhub_job_failures_total", job=job) == 0
        assert value(samples, "memhub_job_last_success_timestamp_seconds", job=job) > 0
    assert value(samples, runs, job="gc") == 0


async def test_metrics_answer_404_when_the_setting_is_unset(db_dsn, tmp_path):
    with server_with(db_dsn, tmp_path) as running:
        answer = await get_metrics(running)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("authorization", [
    None, "Bearer", f"Bearer {METRICS_TOKEN}x", f"Bearer {METRICS_TOKEN[:-1]}",
    f"Basic {METRICS_TOKEN}", METRICS_TOKEN,
])
async def test_a_missing_or_wrong_metrics_token_is_refused(server, authorization):
    headers = {} if authorization is None else {"authorization": authorization}
    answer = await get_metrics(server, None, **headers)
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "UNAUTHORIZED"
    assert "memhub_" not in answer.text


async def test_a_client_token_cannot_read_the_metrics(server, tokens):
    for token in tokens.values():
        assert (await get_metrics(server, token)).status_code == 401
    async with httpx.AsyncClient(timeout=30) as http:
        query = await http.get(f"{server.base_url}/metrics", params={"token": METRICS_TOKEN})
    assert query.status_code == 401  # the header only: a query string ends up in logs


async def test_metrics_answer_whatever_the_host_the_scraper_targets(server):
    assert (await get_metrics(server, host="10.20.30.40:9100")).status_code == 200
    async with httpx.AsyncClient(timeout=30) as http:
        admin = await http.get(f"{server.base_url}/admin", headers={"host": "10.20.30.40:9100"})
    assert admin.status_code == 421  # the other routes still refuse an unknown Host


async def test_no_namespace_or_token_reaches_the_metrics_and_every_label_is_bounded(
    server, db_dsn,
):
    namespace = "quokka-ledger-5e7d"
    scoped = insert_token(db_dsn, "cursor", namespaces=[namespace])
    async with server.client(scoped) as client:
        await call(client, "memory_remember", {"namespace": namespace, "content": "Use UTC."})
        await error_of(client, "memory_get", {"namespace": namespace, "id": MISSING})
        await error_of(client, "memory_list", {"namespace": "other-ns-9a1c"})
        await error_of(client, "memory_remember", {"namespace": namespace, "content": 7})
        await error_of(client, f"{namespace}_tool", {"namespace": namespace})
    async with httpx.AsyncClient(timeout=30) as http:
        await http.get(f"{server.base_url}/artifact/{'ab' * 32}", params={"token": scoped})
        await http.get(f"{server.base_url}/admin/{namespace}")
    answer = await get_metrics(server)
    for secret in (namespace, "other-ns-9a1c", scoped, scoped[3:], WEB_TOKEN, METRICS_TOKEN):
        assert secret not in answer.text
    codes = {"OK"} | _codes(MemhubError)
    allowed = {
        "tool": set(await tool_names()) | {UNKNOWN_TOOL},
        "outcome": {"ok", "error"},
        "code": codes,
        "route": set(ROUTES) | {OTHER_ROUTE},
        "status": {str(s) for s in range(100, 600)} | {"0"},
        "job": set(JOBS),
        "reason": set(REFUSALS) | set(DROPPED_REASONS) | set(LIMIT_REFUSALS),
        "result": {"embedded", "skipped", "failed", "dead"},
        "le": None,  # a histogram's bucket bounds: fixed by the code
    }
    for name, labels in parse(answer.text):
        for key, label_value in labels:
            assert key in allowed, (name, key)
            assert allowed[key] is None or label_value in allowed[key], (name, key, label_value)
    forbidden = {"namespace", "token", "client", "path", "surface", "id"}
    assert not forbidden & {key for _, labels in parse(answer.text) for key, _ in labels}


def _codes(cls: type[MemhubError]) -> set[str]:
    return {cls.code}.union(*(_codes(sub) for sub in cls.__subclasses__()))
