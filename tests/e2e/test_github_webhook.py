"""POST /webhook/github over real HTTP: a signed push or pull_request delivery decides the claims
it affects in every namespace that granted its repository; a bad or missing signature, an
oversized or too deeply nested body, a replayed delivery (under its id or a new one) and a
delivery older than what a claim last recorded change nothing; without a secret the route does
not exist."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import psycopg
import pytest

from tests.conftest import WEB_TOKEN, make_settings
from tests.support.db import grant_repo
from tests.support.deep_json import PAST_THE_BOUND, PAST_THE_PARSER, with_deep_field
from tests.support.mcp import call
from tests.support.server import thread_server

SECRET = "webhook-secret-for-tests"
REPO = "acme/billing"
HEAD = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


@pytest.fixture
def server(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, github_webhook_secret=SECRET)
    with thread_server(settings) as running:
        yield running


def deliver(base: str, event: str, payload: dict, *, delivery: str = "d-1",
            secret: str | None = SECRET, body: bytes | None = None) -> httpx.Response:
    data = body if body is not None else json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
               "Content-Type": "application/json"}
    if secret is not None:
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(
            secret.encode(), data, hashlib.sha256).hexdigest()
    return httpx.post(f"{base}/webhook/github", content=data, headers=headers, timeout=30)


def closed_pr(number: int, merged: bool, updated_at: str = "2026-12-05T10:00:00Z") -> dict:
    return {"action": "closed", "number": number, "repository": {"full_name": REPO},
            "pull_request": {"number": number, "merged": merged, "updated_at": updated_at,
                             "merged_at": updated_at if merged else None}}


def push(branch: str, after: str, pushed_at: int = 1_796_000_000) -> dict:
    """A push as GitHub sends it: repository.pushed_at in seconds since the epoch."""
    return {"ref": f"refs/heads/{branch}", "after": after,
            "repository": {"full_name": REPO, "pushed_at": pushed_at}}


def verdict_rows(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT namespace, verdict, source FROM claim_verdicts"
                            " ORDER BY namespace").fetchall()


async def claims_in_two_namespaces(server, db_dsn,
                                   granted=("acme", "beta")) -> dict[str, str]:
    for ns in granted:
        grant_repo(db_dsn, ns, REPO)
    ids = {}
    async with server.client(WEB_TOKEN) as web:
        for ns in ("acme", "beta"):
            made = await call(web, "memory_remember", {
                "namespace": ns, "content": f"PR 412 merged the retry fix ({ns})",
                "claim": {"repo": REPO, "pr": 412}})
            ids[ns] = made["memory"]["id"]
    return ids


async def test_a_merged_pull_request_makes_its_claims_current_in_every_granting_namespace(
        server, db_dsn):
    ids = await claims_in_two_namespaces(server, db_dsn)
    response = deliver(server.base_url, "pull_request", closed_pr(412, merged=True))
    assert response.status_code == 200 and response.json()["verdicts"] == 2
    assert verdict_rows(db_dsn) == [("acme", "current", "webhook"),
                                    ("beta", "current", "webhook")]
    async with server.client(WEB_TOKEN) as web:
        read = await call(web, "memory_get", {"namespace": "acme", "id": ids["acme"]})
    assert read["memory"]["claim"]["verdict"] == "current"


async def test_a_pull_request_closed_unmerged_makes_its_claims_stale(server, db_dsn):
    await claims_in_two_namespaces(server, db_dsn)
    assert deliver(server.base_url, "pull_request", closed_pr(412, merged=False)
                   ).status_code == 200
    assert {v for _, v, _ in verdict_rows(db_dsn)} == {"stale"}


async def test_a_push_decides_the_branch_head_claims(server, db_dsn):
    grant_repo(db_dsn, "acme", REPO)
    async with server.client(WEB_TOKEN) as web:
        for sha in (HEAD[:7], "b" * 40):
            await call(web, "memory_remember", {
                "namespace": "acme", "content": f"release/2.3 is at {sha}",
                "claim": {"repo": REPO, "branch": "release/2.3", "sha": sha}})
    assert deliver(server.base_url, "push", push("release/2.3", HEAD)).json()["verdicts"] == 2
    assert sorted(v for _, v, _ in verdict_rows(db_dsn)) == ["current", "stale"]


@pytest.mark.parametrize("secret", [None, "the-wrong-secret"])
async def test_a_delivery_without_the_right_signature_is_refused_and_changes_nothing(
        server, db_dsn, secret):
    await claims_in_two_namespaces(server, db_dsn)
    response = deliver(server.base_url, "pull_request", closed_pr(412, merged=False),
                       secret=secret)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert verdict_rows(db_dsn) == []


async def test_a_replayed_delivery_does_nothing(server, db_dsn):
    await claims_in_two_namespaces(server, db_dsn)
    first = deliver(server.base_url, "pull_request", closed_pr(412, merged=True))
    replay = deliver(server.base_url, "pull_request", closed_pr(412, merged=True))
    assert first.json()["verdicts"] == 2
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert len(verdict_rows(db_dsn)) == 2


async def test_an_oversized_delivery_is_refused_before_its_signature_is_read(server, db_dsn):
    big = b"{" + b" " * (5 * 1024 * 1024) + b"}"
    response = deliver(server.base_url, "push", {}, body=big)
    assert response.status_code == 413
    assert verdict_rows(db_dsn) == []


async def test_other_events_are_acknowledged_and_ignored(server, db_dsn):
    await claims_in_two_namespaces(server, db_dsn)
    response = deliver(server.base_url, "ping", {"zen": "Keep it simple.",
                                                 "repository": {"full_name": REPO}})
    assert response.status_code == 200 and response.json()["verdicts"] == 0
    assert verdict_rows(db_dsn) == []


def test_without_a_secret_the_route_does_not_exist(db_dsn, tmp_path):
    with thread_server(make_settings(db_dsn, tmp_path)) as running:
        response = deliver(running.base_url, "push", {"ref": "refs/heads/main"})
    assert response.status_code == 404


async def test_a_delivery_decides_claims_only_in_namespaces_that_granted_its_repository(
        server, db_dsn):
    await claims_in_two_namespaces(server, db_dsn, granted=("acme",))
    response = deliver(server.base_url, "pull_request", closed_pr(412, merged=True))
    assert response.status_code == 200 and response.json()["verdicts"] == 1
    assert verdict_rows(db_dsn) == [("acme", "current", "webhook")]


async def branch_claim(server, db_dsn) -> None:
    grant_repo(db_dsn, "acme", REPO)
    async with server.client(WEB_TOKEN) as web:
        await call(web, "memory_remember", {
            "namespace": "acme", "content": "main is at a1b2c3d",
            "claim": {"repo": REPO, "branch": "main", "sha": HEAD[:7]}})


async def test_a_captured_delivery_resent_under_a_new_id_changes_nothing(server, db_dsn):
    await branch_claim(server, db_dsn)
    captured = json.dumps(push("main", HEAD)).encode()
    assert deliver(server.base_url, "push", {}, body=captured).json()["verdicts"] == 1
    resent = deliver(server.base_url, "push", {}, body=captured, delivery="d-new-id")
    assert resent.status_code == 200 and resent.json()["duplicate"] is True
    assert verdict_rows(db_dsn) == [("acme", "current", "webhook")]


async def test_a_delivery_older_than_what_a_claim_recorded_cannot_roll_its_verdict_back(
        server, db_dsn):
    await branch_claim(server, db_dsn)
    moved = deliver(server.base_url, "push", push("main", "b" * 40, pushed_at=1_796_000_600))
    # An earlier push to the claimed commit, arriving late (out of order, or resent once its
    # delivery is no longer remembered): its body differs, its time is older.
    late = deliver(server.base_url, "push", push("main", HEAD, pushed_at=1_796_000_000),
                   delivery="d-2")
    assert moved.json()["verdicts"] == 1
    assert late.status_code == 200 and late.json()["verdicts"] == 0
    assert verdict_rows(db_dsn) == [("acme", "stale", "webhook")]
    newer = deliver(server.base_url, "push", push("main", HEAD, pushed_at=1_796_001_200),
                    delivery="d-3")
    assert newer.json()["verdicts"] == 1


async def test_a_pull_request_delivery_older_than_the_claims_state_changes_nothing(server,
                                                                                   db_dsn):
    await claims_in_two_namespaces(server, db_dsn)
    deliver(server.base_url, "pull_request",
            closed_pr(412, merged=True, updated_at="2026-12-05T10:00:00Z"))
    older = deliver(server.base_url, "pull_request",
                    closed_pr(412, merged=False, updated_at="2026-12-04T09:00:00Z"),
                    delivery="d-2")
    assert older.json()["verdicts"] == 0
    assert {v for _, v, _ in verdict_rows(db_dsn)} == {"current"}


async def test_a_delivery_without_its_event_time_decides_nothing(server, db_dsn):
    await claims_in_two_namespaces(server, db_dsn)
    undated = closed_pr(412, merged=True)
    del undated["pull_request"]["updated_at"]
    assert deliver(server.base_url, "pull_request", undated).json()["verdicts"] == 0
    assert verdict_rows(db_dsn) == []


@pytest.mark.parametrize("depth", [PAST_THE_BOUND, PAST_THE_PARSER])
async def test_a_signed_delivery_nested_too_deeply_is_refused_with_a_code(server, db_dsn,
                                                                          depth):
    await claims_in_two_namespaces(server, db_dsn)
    body = with_deep_field(closed_pr(412, merged=True), depth)
    response = deliver(server.base_url, "pull_request", {}, body=body)
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert verdict_rows(db_dsn) == []
