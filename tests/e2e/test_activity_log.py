"""The activity log through a real MCP client over HTTP (migration 0047): every tool call is one
row (tool, namespace, surface, token, outcome, error code, duration, time) written off the
request path, never an argument or a result; a call naming a namespace its token may not see
is kept for the operator only; `memhub-admin activity` and the dashboard's Activity page show
a namespace's calls; garbage collection removes the old ones; a full buffer drops rows and
counts them."""

from __future__ import annotations

import json
import uuid

import psycopg
from psycopg.rows import dict_row

from memhub.storage.activity import ActivityBuffer, tool_event
from memhub.storage.retention import RetentionPolicy
from tests.conftest import WEB_TOKEN
from tests.integration.test_admin_cli import cli, ok_json
from tests.support.admin import browser, login
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.memories import open_backend
from tests.support.wait import until_sync

NS, OTHER = "acme", "other-team"
DAY = 86400


def events(dsn: str) -> list[dict]:
    """Every row, as the owner (row-level security set to every namespace)."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        return conn.execute("SELECT *, row_to_json(e)::text AS json FROM tool_events e"
                            " ORDER BY id").fetchall()


def wait_for_rows(dsn: str, n: int) -> list[dict]:
    def written() -> list[dict] | None:
        rows = events(dsn)
        return rows if len(rows) >= n else None

    return until_sync(written, what=f"{n} activity rows written")


async def test_every_call_is_logged_with_who_and_how_it_went_and_never_an_argument_or_result(
    server, db_dsn
):
    secret = "zkq" + uuid.uuid4().hex  # in every argument that carries text
    scoped = insert_token(db_dsn, "cursor", namespaces=[NS])
    async with server.client(WEB_TOKEN) as web, server.client(scoped) as cursor:
        made = await call(web, "memory_remember", {
            "namespace": NS, "title": f"Vault {secret}", "content": f"The token is {secret}",
            "key": f"ops/{secret}", "tags": [secret], "client_request_id": secret[:60]})
        answered = await call(web, "memory_search", {"namespace": NS, "query": secret})
        await call(cursor, "memory_get", {"namespace": NS, "key": f"ops/{secret}"})
        await call(web, "handoff_save", {"namespace": NS, "title": secret, "body": secret})
        bad = await error_of(web, "memory_get", {"namespace": NS, "id": secret})
        refused = await error_of(cursor, "memory_search", {"namespace": OTHER, "query": secret})
    assert (bad["code"], refused["code"]) == ("INVALID_INPUT", "FORBIDDEN")

    rows = wait_for_rows(db_dsn, 6)
    text = "\n".join(r["json"] for r in rows)
    assert secret[:12] not in text  # not even a piece of it
    for result_value in (made["memory"]["id"], answered["results"][0]["id"]):
        assert result_value not in text
    assert [(r["tool"], r["namespace"], r["surface"], r["outcome"], r["error_code"])
            for r in rows] == [
        ("memory_remember", NS, "web", "ok", None),
        ("memory_search", NS, "web", "ok", None),
        ("memory_get", NS, "cursor", "ok", None),
        ("handoff_save", NS, "web", "ok", None),
        ("memory_get", NS, "web", "error", "INVALID_INPUT"),
        # Named a namespace its token may not see: the operator's, no tenant's.
        ("memory_search", None, "cursor", "error", "FORBIDDEN"),
    ]
    assert len({r["token_id"] for r in rows}) == 2 and None not in {r["token_id"] for r in rows}
    assert all(r["duration_ms"] >= 0 for r in rows)
    assert [r["at"] for r in rows] == sorted(r["at"] for r in rows)

    shown = ok_json(cli(db_dsn, "activity", NS, "--limit", "10", "--json"))
    assert [e["tool"] for e in shown["events"]] == [
        "memory_get", "handoff_save", "memory_get", "memory_search", "memory_remember"]
    assert shown["events"][0]["error_code"] == "INVALID_INPUT"
    assert secret not in json.dumps(shown)
    assert ok_json(cli(db_dsn, "activity", OTHER, "--json"))["events"] == []
    refused_limit = cli(db_dsn, "activity", NS, "--limit", "0", "--json")
    assert refused_limit.returncode != 0
    assert json.loads(refused_limit.stdout)["error"]["code"] == "INVALID_INPUT"

    with browser(server.base_url) as client:
        assert client.get(f"/admin/namespaces/{NS}/activity").status_code == 303  # log in first
        login(client)
        dashboard = client.get("/admin")
        assert f'href="/admin/namespaces/{NS}/activity"' in dashboard.text
        page = client.get(f"/admin/namespaces/{NS}/activity")
        assert page.status_code == 200
        assert page.text.count('data-tool="') == 5 and 'data-outcome="error"' in page.text
        assert secret not in page.text
        assert client.get("/admin/namespaces/Not%20A%20Name/activity").status_code == 400


def test_a_tenant_reads_only_its_own_namespaces_activity_and_none_without_one(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        conn.execute("INSERT INTO tool_events (namespace, tool, surface, token_id, outcome,"
                     " error_code, duration_ms) VALUES (%s, 'stats', 'web', 1, 'ok', NULL, 1),"
                     " (%s, 'stats', 'web', 1, 'ok', NULL, 1),"
                     " (NULL, 'stats', 'web', 1, 'error', 'FORBIDDEN', 1)", [NS, OTHER])
        conn.execute("SET ROLE memhub_app")
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.namespaces', %s, true)", [NS])
            seen = conn.execute("SELECT namespace FROM tool_events").fetchall()
        assert seen == [(NS,)]


async def test_gc_removes_activity_older_than_its_retention_and_keeps_the_rest(db_dsn, tmp_path):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        for age_days in (15, 13):
            conn.execute("INSERT INTO tool_events (namespace, tool, surface, outcome,"
                         " duration_ms, at) VALUES (%s, 'stats', 'web', 'ok', 1,"
                         " now() - make_interval(days => %s))", [NS, age_days])
    policy = RetentionPolicy(idempotency_ttl_seconds=7 * DAY, dead_job_ttl_seconds=30 * DAY,
                             artifact_grace_seconds=DAY, activity_retention_days=14)
    async with open_backend(db_dsn, tmp_path) as backend:
        dry = await backend.collect_garbage(policy, dry_run=True)
        report = await backend.collect_garbage(policy)
        run = await backend.last_gc_run()
    assert dry["removed"]["tool_events"] == 1 and report["removed"]["tool_events"] == 1
    assert run is not None and run["removed"]["tool_events"] == 1
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        left = conn.execute("SELECT extract(day FROM now() - at)::int FROM tool_events"
                            ).fetchall()
    assert left == [(13,)]


async def test_a_full_buffer_drops_rows_and_a_refused_write_drops_its_batch_both_counted(
    db_dsn, tmp_path
):
    dropped: list[tuple[str, int]] = []
    buffer = ActivityBuffer(capacity=2, on_drop=lambda reason, n: dropped.append((reason, n)))
    for _ in range(3):
        buffer.record(tool_event("stats", NS, surface="web", token_id=1,
                                 may_see=lambda ns: True, error_code=None, seconds=0.001))
    assert len(buffer) == 2 and dropped == [("overflow", 1)]
    async with open_backend(db_dsn, tmp_path) as backend:
        assert await buffer.flush(backend) == 2
        buffer.record(tool_event("stats", NS, surface="web", token_id=1,
                                 may_see=lambda ns: True, error_code=None, seconds=0.001))
    # The backend is closed now: the database cannot be reached, and the batch is dropped.
    assert await buffer.flush(backend) == 0
    assert dropped == [("overflow", 1), ("write_failed", 1)] and len(buffer) == 0
    assert len(events(db_dsn)) == 2
