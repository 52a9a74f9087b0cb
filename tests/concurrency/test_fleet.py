"""Three memhub processes on one PostgreSQL through one PgBouncer (transaction pooling), and a
client spreading its calls over them round robin, as a load balancer would.

What the database decides must not depend on which process a call reaches: one winner of a
compare-and-set, a replayed idempotency key, a handoff taken once, gap-free session events,
each memory embedded once with a worker in every process, and the scheduled jobs (expiry
sweep, word-statistics recount) run by every process without doing one piece of work twice.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path

import psycopg
import pytest

from bench.pgbouncer import pgbouncer
from tests.conftest import WEB_TOKEN
from tests.support.server import RunningServer, process_server
from tests.support.wait import until

pytestmark = pytest.mark.slow

PROCESSES = 3
WRITERS = 50
EMBEDDED = 24
EXPIRING = 12


class RoundRobin:
    """One MCP client per process; each call goes to the next process in turn."""

    def __init__(self, clients: list) -> None:
        self.clients = clients
        self._turn = itertools.count()

    async def call(self, tool: str, args: dict) -> dict:
        """The structured answer, or the error payload ({"code", ...}) of a refused call."""
        client = self.clients[next(self._turn) % len(self.clients)]
        result = await client.call_tool(tool, args, raise_on_error=False)
        if result.is_error:
            return json.loads(result.content[0].text)
        return result.structured_content

    async def each(self, tool: str, args: dict) -> list[dict]:
        """`tool` called once on every process, in order."""
        return [(await c.call_tool(tool, args)).structured_content for c in self.clients]


@pytest.fixture
def fleet(admin_dsn, db_dsn, tmp_path):
    with pgbouncer(admin_dsn, pool_size=4) as bouncer, ExitStack() as stack:
        servers: list[RunningServer] = []
        for i in range(PROCESSES):
            env = {
                "DATABASE_URL": bouncer.dsn(db_dsn),
                "MEMHUB_DB_POOLER": "transaction",
                "MCP_AUTH_TOKEN": WEB_TOKEN,
                "MEMHUB_DATA_DIR": str(tmp_path / f"p{i}"),
                "MEMHUB_POOL_MAX_SIZE": "24",
                # Many clients on one token at once: the database is under test here, not
                # the token's in-flight limit (docs/operations.md#per-token-and-per-namespace).
                "MEMHUB_TOKEN_MAX_IN_FLIGHT": "100",
                "MEMHUB_EMBED_THREADS": "1",
                "MEMHUB_QUERY_THREADS": "1",
                "MEMHUB_EXPIRY_SWEEP_SECONDS": "0.3",
                "MEMHUB_LEXICON_REFRESH_SECONDS": "0.3",
            }
            if os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
                env["MEMHUB_EMBED_MODEL_PATH"] = os.environ["MEMHUB_EMBED_MODEL_PATH"]
            servers.append(stack.enter_context(process_server(env))[0])
        yield servers


def query(dsn: str, sql: str, params=()) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def log_records(servers: list[RunningServer]) -> list[dict]:
    records = []
    for server in servers:
        for line in Path(server.log_path).read_text().splitlines():
            if line.startswith("{"):
                records.append(json.loads(line))
    return records


async def test_a_fleet_behind_one_pooler_keeps_every_guarantee_of_one_process(fleet, db_dsn):
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(s.client(WEB_TOKEN)) for s in fleet]
        rr = RoundRobin(clients)

        async def models_ready():
            stats = await rr.each("stats", {})
            return all(s["embedding_model"]["state"] == "ready"
                       and s["embedding_model"]["worker"]["running"] for s in stats)

        await until(models_ready, timeout=60, what="every process loading its model")

        # The embedding queue: every process's worker claims from it; each memory once.
        await asyncio.gather(*(rr.call("memory_remember", {
            "namespace": "embed", "content": f"Service {i} owns the invoices of region {i}"})
            for i in range(EMBEDDED)))

        async def drained():
            left = query(db_dsn, "SELECT count(*) FROM embedding_jobs")[0][0]
            done = query(db_dsn, "SELECT count(*) FROM memory_embeddings"
                                 " WHERE namespace = 'embed'")[0][0]
            return left == 0 and done == EMBEDDED

        await until(drained, timeout=60, what="the embedding queue draining")
        workers = [s["embedding_model"]["worker"] for s in await rr.each("stats", {})]
        assert sum(w["embedded"] for w in workers) == EMBEDDED
        assert all(w["running"] and not w["listening"] for w in workers)

        # Compare-and-set: one winner among WRITERS revisions of one revision.
        memory = (await rr.call("memory_remember", {"namespace": "cas",
                                                    "content": "contended"}))["memory"]
        outcomes = await asyncio.gather(*(rr.call("memory_revise", {
            "namespace": "cas", "id": memory["id"], "expected_revision": 1,
            "content": f"writer {i}"}) for i in range(WRITERS)))
        assert [o.get("outcome") for o in outcomes].count("revised") == 1
        assert sorted(o.get("code", "") for o in outcomes) == [""] + ["CONFLICT"] * (WRITERS - 1)
        assert query(db_dsn, "SELECT current_revision FROM memories WHERE id = %s",
                     [memory["id"]]) == [(2,)]
        assert query(db_dsn, "SELECT count(*) FROM memory_revisions WHERE memory_id = %s",
                     [memory["id"]]) == [(2,)]

        # Idempotency: a key replayed on another process, and one sent to all at once.
        args = {"namespace": "keys", "content": "written once", "client_request_id": "k-1"}
        first = await rr.call("memory_remember", args)
        replays = [await rr.call("memory_remember", args) for _ in range(PROCESSES - 1)]
        assert first["outcome"] == "created"
        assert [r["outcome"] for r in replays] == ["replayed"] * (PROCESSES - 1)
        assert {r["memory"]["id"] for r in replays} == {first["memory"]["id"]}
        args = {"namespace": "keys", "content": "raced", "client_request_id": "k-2"}
        raced = await asyncio.gather(*(rr.call("memory_remember", args) for _ in range(9)))
        assert sorted(r["outcome"] for r in raced) == ["created"] + ["replayed"] * 8
        assert len({r["memory"]["id"] for r in raced}) == 1

        # Handoffs: of many takers spread over the processes, one takes it.
        for _ in range(3):
            hid = (await rr.call("handoff_save", {"namespace": "work", "title": "t",
                                                  "body": "b"}))["handoff"]["id"]
            takes = await asyncio.gather(*(rr.call("handoff_load", {
                "namespace": "work", "id": hid}) for _ in range(9)))
            assert [t.get("outcome") for t in takes].count("taken") == 1
            assert sorted(t.get("code", "") for t in takes) == [""] + ["CONFLICT"] * 8

        # Session events: appends through every process numbered 1..N without a gap.
        sid = (await rr.call("session_create", {"namespace": "work", "title": "s"}))[
            "session"]["id"]
        appended = await asyncio.gather(*(rr.call("session_append_event", {
            "namespace": "work", "session_id": sid, "type": "step", "payload": {"i": i},
            "event_id": f"e{i}"}) for i in range(WRITERS)))
        assert sorted(a["event"]["seq"] for a in appended) == list(range(1, WRITERS + 1))
        assert query(db_dsn, "SELECT count(*), max(seq) FROM session_events"
                             " WHERE session_id = %s", [sid]) == [(WRITERS, WRITERS)]

        # Scheduled jobs, run by every process: each memory expired by exactly one sweep.
        soon = query(db_dsn, "SELECT (now() + interval '2 seconds')::text")[0][0]
        await asyncio.gather(*(rr.call("memory_remember", {
            "namespace": "expiring", "content": f"temporary note {i}", "expires_at": soon})
            for i in range(EXPIRING)))

        async def expired():
            return query(db_dsn, "SELECT count(*) FROM memories WHERE namespace = 'expiring'"
                                 " AND status = 'EXPIRED'")[0][0] == EXPIRING

        await until(expired, timeout=30, what="the sweeps expiring the memories")

        # ... and the word statistics recounted to what the namespace holds.
        async def recounted():
            return query(db_dsn, "SELECT docs, max_seq FROM lexicon_state"
                                 " WHERE namespace = 'embed'") == query(
                db_dsn, "SELECT count(*)::int, max(seq) FROM memories"
                        " WHERE namespace = 'embed' AND status = 'ACTIVE'")

        await until(recounted, timeout=30, what="the word statistics recounted")

    records = log_records(fleet)
    swept = [r for r in records if r["msg"] == "expired memories"]
    assert sum(r["count"] for r in swept) == EXPIRING
    troubles = [r for r in records if r["level"] in ("ERROR", "CRITICAL")
                or r["msg"] in ("expiry sweep failed", "lexicon recount failed",
                                "embedding worker error; backing off")]
    assert troubles == []
