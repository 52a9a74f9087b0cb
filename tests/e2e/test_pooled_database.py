"""A real memhub whose DATABASE_URL is a real PgBouncer in transaction pooling mode with ONE
server connection: every request of every client runs its transactions, in turn, on the same
server session."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from bench.pgbouncer import fresh_session_state, pgbouncer
from memhub.storage.postgres.core import APP_ROLE
from tests.conftest import WEB_TOKEN, make_settings
from tests.support import db
from tests.support.mcp import call, error_of
from tests.support.server import thread_server
from tests.support.wait import until

NS = "acme"
ALPHA, BETA = "alpha-proj", "beta-proj"


@pytest.fixture
def bouncer(admin_dsn):
    with pgbouncer(admin_dsn, pool_size=1) as running:
        yield running


@pytest.fixture
def pooled_server(db_dsn, bouncer, tmp_path):
    settings = make_settings(bouncer.dsn(db_dsn), tmp_path, db_pooler="transaction")
    with thread_server(settings) as running:
        yield running


async def test_the_tools_work_through_a_transaction_pooler(pooled_server, db_dsn):
    async with pooled_server.client(WEB_TOKEN) as web:
        made = await call(web, "memory_remember", {
            "namespace": NS, "kind": "DECISION",
            "content": "Billing exports run nightly through the pgbouncer-friendly worker"})
        mid = made["memory"]["id"]
        revised = await call(web, "memory_revise", {
            "namespace": NS, "id": mid, "expected_revision": 1,
            "content": "Billing exports run hourly through the pgbouncer-friendly worker"})
        stale = await error_of(web, "memory_revise", {
            "namespace": NS, "id": mid, "expected_revision": 1, "content": "stale"})
        assert (revised["outcome"], stale["code"]) == ("revised", "CONFLICT")
        assert stale["details"]["current_revision"] == 2

        found = await call(web, "memory_search", {"namespace": NS, "query": "billing exports",
                                                  "mode": "lexical"})
        assert [r["id"] for r in found["results"]] == [mid]
        context = await call(web, "memory_context", {"namespace": NS, "query": "billing"})
        assert [m["id"] for m in context["memories"]] == [mid]

        # The embedding worker cannot LISTEN through the pooler: it polls, and still embeds.
        async def embedded():
            with psycopg.connect(db_dsn) as conn:
                return conn.execute("SELECT revision FROM memory_embeddings WHERE memory_id = %s",
                                    [mid]).fetchone() == (2,)

        await until(embedded, timeout=60, what="the revision embedded")
        worker = pooled_server.app.state.runtime.embedding_worker.status()
        assert worker["running"] and not worker["listening"]
        semantic = await call(web, "memory_search", {"namespace": NS, "mode": "semantic",
                                                     "query": "how often do billing exports run"})
        assert mid in [r["id"] for r in semantic["results"]]

        saved = await call(web, "handoff_save", {"namespace": NS, "title": "t", "body": "b"})
        hid = saved["handoff"]["id"]
        taken = await call(web, "handoff_load", {"namespace": NS, "id": hid})
        again = await error_of(web, "handoff_load", {"namespace": NS, "id": hid})
        assert (taken["outcome"], again["code"]) == ("taken", "CONFLICT")

        sid = (await call(web, "session_create", {"namespace": NS, "title": "s"}))[
            "session"]["id"]
        seqs = await asyncio.gather(*(
            call(web, "session_append_event", {"namespace": NS, "session_id": sid,
                                               "type": "step", "payload": {"i": i},
                                               "event_id": f"e{i}"})
            for i in range(6)))
        assert sorted(s["event"]["seq"] for s in seqs) == [1, 2, 3, 4, 5, 6]
        events = await call(web, "session_events", {"namespace": NS, "session_id": sid})
        assert [e["seq"] for e in events["events"]] == [1, 2, 3, 4, 5, 6]
        assert (await call(web, "stats", {}))["database"] == "ok"


async def test_two_tenants_interleaved_on_one_server_connection_see_only_their_own(
    pooled_server, bouncer, db_dsn, admin_dsn
):
    alpha = db.insert_token(db_dsn, "cursor", namespaces=[ALPHA])
    beta = db.insert_token(db_dsn, "desktop-cli", namespaces=[BETA])
    alpha_reader = db.insert_token(db_dsn, "cursor", namespaces=[ALPHA], read_only=True)

    async def tenant(token: str, ns: str) -> list[list[str]]:
        async with pooled_server.client(token) as client:
            seen = []
            for i in range(6):
                await call(client, "memory_remember", {"namespace": ns,
                                                       "content": f"{ns} fact number {i}"})
                listed = await call(client, "memory_list", {"namespace": ns})
                seen.append(sorted({m["namespace"] for m in listed["memories"]}))
            return seen

    async def reader() -> list[str]:
        async with pooled_server.client(alpha_reader) as client:
            codes = []
            for _ in range(6):
                codes.append((await error_of(client, "memory_remember", {
                    "namespace": ALPHA, "content": "a reader's write"}))["code"])
                codes.append((await error_of(client, "memory_list", {"namespace": BETA}))[
                    "code"])
            return codes

    alpha_seen, beta_seen, reader_codes = await asyncio.gather(
        tenant(alpha, ALPHA), tenant(beta, BETA), reader())
    assert alpha_seen == [[ALPHA]] * 6 and beta_seen == [[BETA]] * 6
    assert set(reader_codes) == {"FORBIDDEN"}
    async with pooled_server.client(alpha_reader) as client:
        listed = await call(client, "memory_list", {"namespace": ALPHA})
    assert len(listed["memories"]) == 6

    assert len(await asyncio.to_thread(bouncer.server_pids, db_dsn)) == 1
    session = await asyncio.to_thread(bouncer.session_state, db_dsn)
    assert session["current_user"] != APP_ROLE
    assert session == fresh_session_state(admin_dsn)
