"""Side channels between tenants, attacked through the real /mcp endpoint with real scoped
tokens: what one project's token sees must not move with another project's activity."""

from __future__ import annotations

import time

from tests.conftest import WEB_TOKEN
from tests.e2e.test_search_tools import model_state
from tests.support.db import insert_token
from tests.support.mcp import call

SECRET_QUERY = "which vendor did the board pick for payroll 7781"


async def _embedded_since(operator, before: dict, timeout: float = 30.0) -> dict:
    """The server-wide model status once the worker has embedded something since `before`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = (await call(operator, "stats", {}))["embedding_model"]
        if now["worker"]["embedded"] > before["worker"]["embedded"]:
            return now
    raise AssertionError("the embedding worker embedded nothing")


async def test_another_tenants_searches_and_writes_do_not_move_a_scoped_tokens_stats(
    server, db_dsn
):
    """The attack: tenant B reads the query cache's hit counter, tenant A searches a string
    twice (a hit), B reads again. B's whole answer must be unchanged, while an all-namespace
    token still sees the server-wide counters move."""
    tenant_a = insert_token(db_dsn, "cursor", namespaces=["team-a"])
    tenant_b = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    async with server.client(tenant_b) as b, server.client(WEB_TOKEN) as operator:
        assert await model_state(b) == "ready"
        before = await call(b, "stats", {})
        wide_before = (await call(operator, "stats", {}))["embedding_model"]
        async with server.client(tenant_a) as a:
            await call(a, "memory_remember", {"namespace": "team-a",
                                              "content": "Payroll moves to the new vendor"})
            for _ in range(2):
                await call(a, "memory_search", {"namespace": "team-a", "query": SECRET_QUERY})
        wide_after = await _embedded_since(operator, wide_before)
        after = await call(b, "stats", {})
    assert after == before
    assert "query_cache" not in after["embedding_model"]
    assert set(after["embedding_model"]["worker"]) == {"running", "listening"}
    assert wide_after["query_cache"]["hits"] > wide_before["query_cache"]["hits"]


async def test_a_scoped_tokens_queue_depth_counts_only_its_namespaces_jobs(
    server, db_dsn, db_conn
):
    tenant_b = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    db_conn.execute("SET session_replication_role = replica")  # no worker wake-up trigger
    db_conn.execute(
        "INSERT INTO memories (id, namespace, kind, content, content_hash, author_client)"
        " VALUES (gen_random_uuid(), 'team-a', 'FACT', 'x', '\\x01', 'web')")
    db_conn.execute(
        "INSERT INTO embedding_jobs (namespace, memory_id, revision, status)"
        " SELECT namespace, id, 1, 'dead' FROM memories WHERE namespace = 'team-a'")
    async with server.client(tenant_b) as b, server.client(WEB_TOKEN) as operator:
        mine = (await call(b, "stats", {}))["embedding_queue"]
        everyone = (await call(operator, "stats", {}))["embedding_queue"]
    assert mine == {"pending": 0, "dead": 0}
    assert everyone["dead"] == 1


def _without_identity(answer: dict) -> dict:
    artifact = {k: v for k, v in answer["artifact"].items()
                if k not in ("sha256", "size", "created_at")}
    return {**answer, "artifact": artifact}


async def test_putting_bytes_another_tenant_holds_answers_as_for_new_bytes(server, db_dsn):
    """The attack: B puts a file it suspects A holds. The answer must be what B gets for bytes
    nobody ever stored (a membership oracle otherwise)."""
    tenant_a = insert_token(db_dsn, "cursor", namespaces=["team-a"])
    tenant_b = insert_token(db_dsn, "cursor", namespaces=["team-b"])
    async with server.client(tenant_a) as a:
        await call(a, "artifact_put", {"namespace": "team-a", "name": "salaries.csv",
                                       "text": "alice,120000\nbob,95000\n"})
    async with server.client(tenant_b) as b:
        held_elsewhere = await call(b, "artifact_put", {
            "namespace": "team-b", "name": "guess.csv", "text": "alice,120000\nbob,95000\n"})
        never_seen = await call(b, "artifact_put", {
            "namespace": "team-b", "name": "guess.csv", "text": "carol,1\n"})
        own_again = await call(b, "artifact_put", {
            "namespace": "team-b", "name": "again.csv", "text": "carol,1\n"})
    assert held_elsewhere["bytes_stored"] is True and held_elsewhere["outcome"] == "created"
    assert _without_identity(held_elsewhere) == _without_identity(never_seen)
    assert set(held_elsewhere["artifact"]) == set(never_seen["artifact"])
    # Whether THIS namespace already held the bytes is the caller's own business.
    assert own_again["bytes_stored"] is False


async def test_a_second_token_of_the_surface_never_receives_the_first_ones_stored_answer(
    server, db_dsn
):
    """Two tokens of surface cursor, both on one project, the same client_request_id and the
    same arguments: each gets its own write; only the key's owner replays."""
    first = insert_token(db_dsn, "cursor", namespaces=["shared"])
    second = insert_token(db_dsn, "cursor", namespaces=["shared"])
    args = {"namespace": "shared", "title": "Release plan", "body": "Freeze on Monday",
            "client_request_id": "k-1"}
    async with server.client(first) as one, server.client(second) as two:
        mine = await call(one, "handoff_save", args)
        theirs = await call(two, "handoff_save", args)
        retried = await call(one, "handoff_save", args)
    assert mine["outcome"] == theirs["outcome"] == "created"
    assert theirs["handoff"]["id"] != mine["handoff"]["id"]
    assert retried["outcome"] == "replayed"
    assert retried["handoff"]["id"] == mine["handoff"]["id"]
