"""POST /webhook/github over real HTTP: a signed push or pull_request delivery decides the claims
it affects in every namespace; a bad or missing signature, an oversized body and a replayed
delivery change nothing; without a secret the route does not exist."""

from __future__ import annotations

import hashlib
import hmac
import json

import httpx
import psycopg
import pytest

from tests.conftest import WEB_TOKEN, make_settings
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


def closed_pr(number: int, merged: bool) -> dict:
    return {"action": "closed", "number": number, "repository": {"full_name": REPO},
            "pull_request": {"number": number, "merged": merged,
                             "merged_at": "2026-12-05T10:00:00Z" if merged else None}}


def verdict_rows(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT namespace, verdict, source FROM claim_verdicts"
                            " ORDER BY namespace").fetchall()


async def claims_in_two_namespaces(server) -> dict[str, str]:
    ids = {}
    async with server.client(WEB_TOKEN) as web:
        for ns in ("acme", "beta"):
            made = await call(web, "memory_remember", {
                "namespace": ns, "content": f"PR 412 merged the retry fix ({ns})",
                "claim": {"repo": REPO, "pr": 412}})
            ids[ns] = made["memory"]["id"]
    return ids


async def test_a_merged_pull_request_makes_its_claims_current_in_every_namespace(server,
                                                                                  db_dsn):
    ids = await claims_in_two_namespaces(server)
    response = deliver(server.base_url, "pull_request", closed_pr(412, merged=True))
    assert response.status_code == 200 and response.json()["verdicts"] == 2
    assert verdict_rows(db_dsn) == [("acme", "current", "webhook"),
                                    ("beta", "current", "webhook")]
    async with server.client(WEB_TOKEN) as web:
        read = await call(web, "memory_get", {"namespace": "acme", "id": ids["acme"]})
    assert read["memory"]["claim"]["verdict"] == "current"


async def test_a_pull_request_closed_unmerged_makes_its_claims_stale(server, db_dsn):
    await claims_in_two_namespaces(server)
    assert deliver(server.base_url, "pull_request", closed_pr(412, merged=False)
                   ).status_code == 200
    assert {v for _, v, _ in verdict_rows(db_dsn)} == {"stale"}


async def test_a_push_decides_the_branch_head_claims(server, db_dsn):
    async with server.client(WEB_TOKEN) as web:
        for sha in (HEAD[:7], "b" * 40):
            await call(web, "memory_remember", {
                "namespace": "acme", "content": f"release/2.3 is at {sha}",
                "claim": {"repo": REPO, "branch": "release/2.3", "sha": sha}})
    push = {"ref": "refs/heads/release/2.3", "after": HEAD, "repository": {"full_name": REPO}}
    assert deliver(server.base_url, "push", push).json()["verdicts"] == 2
    assert sorted(v for _, v, _ in verdict_rows(db_dsn)) == ["current", "stale"]


@pytest.mark.parametrize("secret", [None, "the-wrong-secret"])
async def test_a_delivery_without_the_right_signature_is_refused_and_changes_nothing(
        server, db_dsn, secret):
    await claims_in_two_namespaces(server)
    response = deliver(server.base_url, "pull_request", closed_pr(412, merged=False),
                       secret=secret)
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert verdict_rows(db_dsn) == []


async def test_a_replayed_delivery_does_nothing(server, db_dsn):
    await claims_in_two_namespaces(server)
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
    await claims_in_two_namespaces(server)
    response = deliver(server.base_url, "ping", {"zen": "Keep it simple.",
                                                 "repository": {"full_name": REPO}})
    assert response.status_code == 200 and response.json()["verdicts"] == 0
    assert verdict_rows(db_dsn) == []


def test_without_a_secret_the_route_does_not_exist(db_dsn, tmp_path):
    with thread_server(make_settings(db_dsn, tmp_path)) as running:
        response = deliver(running.base_url, "push", {"ref": "refs/heads/main"})
    assert response.status_code == 404
