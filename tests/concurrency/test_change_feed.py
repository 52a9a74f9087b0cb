"""No change is ever missed or delivered twice by memory_changes, under concurrent commits.

Twenty writers change one namespace at once while a reader follows the feed through the MCP
tool (on one of two memhub server processes), keeping only its cursor:

- 8 writers call the MCP tools, 4 on each of the two server processes;
- 11 write through the storage backend in this process, for bulk (the MCP path, two processes
  and the reader sharing 2 cores, would take minutes for 10,000 changes on its own), with the
  token's caller bound as the gate binds it;
- 1 is the ordering trap made deterministic: it writes a memory as the app role, so its change
  id is taken, then keeps its transaction open until a LATER change has committed and the
  reader has finished a whole read after that commit; only then it commits. A reader that
  trusted id order would have moved past its change by then and never deliver it.

Afterwards every delivered change is compared with what the tables say was committed (each
memory created, each later revision, each supersession and forget, each handoff saved and
taken, each session closed): exactly once each, nothing else.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from contextlib import AsyncExitStack, ExitStack

import psycopg
import pytest

from memhub.storage.postgres.scope import bind_caller
from memhub.storage.principal import Principal
from tests.conftest import WEB_TOKEN
from tests.support.mcp import call
from tests.support.memories import open_backend
from tests.support.server import process_server

pytestmark = pytest.mark.slow

NS = "feed"
SERVERS = 2
MCP_WRITERS_PER_SERVER = 4
BACKEND_WRITERS = 11
MCP_UNITS = 20          # per MCP writer; a unit is about 6 changes
TARGET = 10_200         # changes in all, at least
READ_LIMIT = 500
DEADLINE = 150.0        # bound of the whole run (it takes far less)
QUIET_SECONDS = 15.0    # how long the reader waits for the horizon once every writer is done


class Follower:
    """The reader's progress: what it was given, and a signal after each completed read."""

    def __init__(self) -> None:
        self.delivered: list[dict] = []
        self.reads = 0
        self.read_done = asyncio.Condition()

    async def after_reads(self, n: int, timeout: float) -> bool:
        """Wait until `n` more reads completed; False if that took longer than `timeout`."""
        async with self.read_done:
            goal = self.reads + n
            try:
                await asyncio.wait_for(self.read_done.wait_for(lambda: self.reads >= goal),
                                       timeout)
            except TimeoutError:
                return False
        return True


class McpWriter:
    def __init__(self, client) -> None:
        self.client = client

    async def remember(self, content: str, supersedes=None) -> str:
        args = {"namespace": NS, "content": content}
        if supersedes:
            args["supersedes"] = supersedes
        return (await call(self.client, "memory_remember", args))["memory"]["id"]

    async def revise(self, memory_id: str, content: str) -> None:
        await call(self.client, "memory_revise", {"namespace": NS, "id": memory_id,
                                                  "expected_revision": 1, "content": content})

    async def forget(self, memory_id: str) -> None:
        await call(self.client, "memory_forget", {"namespace": NS, "id": memory_id,
                                                  "reason": "replaced"})

    async def handoff(self, title: str) -> None:
        saved = await call(self.client, "handoff_save", {"namespace": NS, "title": title,
                                                         "body": "carry on"})
        await call(self.client, "handoff_load", {"namespace": NS,
                                                 "id": saved["handoff"]["id"]})

    async def session(self, title: str) -> None:
        made = await call(self.client, "session_create", {"namespace": NS, "title": title})
        await call(self.client, "session_close", {"namespace": NS,
                                                  "session_id": made["session"]["id"]})


class BackendWriter:
    def __init__(self, backend, principal: Principal) -> None:
        self.b, self.p = backend, principal

    async def remember(self, content: str, supersedes=None) -> str:
        out = await self.b.remember(self.p, NS, content=content, supersedes=supersedes)
        return out["memory"]["id"]

    async def revise(self, memory_id: str, content: str) -> None:
        await self.b.revise(self.p, NS, memory_id, 1, content=content)

    async def forget(self, memory_id: str) -> None:
        await self.b.forget(self.p, NS, memory_id, "replaced")

    async def handoff(self, title: str) -> None:
        saved = await self.b.handoff_save(self.p, NS, title=title, body="carry on")
        await self.b.handoff_load(self.p, NS, handoff_id=saved["handoff"]["id"])

    async def session(self, title: str) -> None:
        made = await self.b.session_create(self.p, NS, title=title)
        await self.b.session_close(self.p, NS, session_id=made["session"]["id"])


async def unit(writer, name: str, i: int) -> int:
    """One piece of work: create, revise, supersede, forget (5 changes); every 4th also a
    handoff saved and taken and a session closed (3 more). Returns the changes it made."""
    tag = f"{name} {i} {uuid.uuid4().hex[:8]}"
    first = await writer.remember(f"decision {tag}")
    await writer.revise(first, f"decision {tag}, revised")
    second = await writer.remember(f"replacement {tag}", supersedes=[first])
    await writer.forget(second)
    if i % 4 == 0:
        await writer.handoff(f"handoff {tag}")
        await writer.session(f"session {tag}")
        return 8
    return 5


class Tally:
    def __init__(self) -> None:
        self.changes = 0


async def straggle(db_dsn: str, follower: Follower, stop: asyncio.Event) -> list[bool]:
    """Commit changes late behind later ones; one entry per attempt: True when a later
    change had committed and a whole read had finished before this one committed."""
    trapped: list[bool] = []
    async with await psycopg.AsyncConnection.connect(db_dsn) as conn, \
            await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as watcher:
        await conn.execute("SET ROLE memhub_app")
        await conn.execute("SELECT set_config('memhub.namespaces', %s, false),"
                           " set_config('memhub.surface', 'straggler', false)", [NS])
        await conn.commit()
        while not stop.is_set():
            content = f"late {uuid.uuid4().hex}"
            memory_id = str(uuid.uuid4())
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO memories (id, namespace, kind, content, content_hash,"
                    " author_client) VALUES (%s, %s, 'NOTE', %s,"
                    " sha256(convert_to(%s, 'UTF8')), 'straggler')",
                    [memory_id, NS, content, content])
                await conn.execute(
                    "INSERT INTO memory_revisions (memory_id, namespace, revision, content,"
                    " author_client) VALUES (%s, %s, 1, %s, 'straggler')",
                    [memory_id, NS, content])
                mine = (await (await conn.execute(
                    "SELECT id FROM change_feed WHERE target_id = %s", [memory_id])).fetchone())[0]
                later = False
                for _ in range(200):  # bounded: each turn is one completed read
                    if stop.is_set():
                        break  # the writers are done: no later change will come
                    row = await (await watcher.execute(
                        "SELECT max(id) FROM change_feed WHERE namespace = %s", [NS])).fetchone()
                    if row[0] is not None and row[0] > mine:
                        later = True
                        break
                    if not await follower.after_reads(1, 10.0):
                        break
                # A read that STARTED after the later change committed, and finished.
                trapped.append(later and await follower.after_reads(2, 10.0))
    return trapped


@pytest.fixture
def servers(db_dsn, tmp_path):
    with ExitStack() as stack:
        running = []
        for i in range(SERVERS):
            env = {
                "DATABASE_URL": db_dsn,
                "MCP_AUTH_TOKEN": WEB_TOKEN,
                "MEMHUB_DATA_DIR": str(tmp_path / f"p{i}"),
                "MEMHUB_POOL_MAX_SIZE": "8",
                # Many clients on one token at once: the database is under test here, not
                # the token's in-flight limit (docs/operations.md#per-token-and-per-namespace).
                "MEMHUB_TOKEN_MAX_IN_FLIGHT": "100",
                "MEMHUB_EMBED_WORKER": "false",  # no embedding CPU: this test is about the feed
                "MEMHUB_QUERY_QUANTIZE": "none",
                "MEMHUB_EMBED_THREADS": "1",
                "MEMHUB_QUERY_THREADS": "1",
            }
            if os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
                env["MEMHUB_EMBED_MODEL_PATH"] = os.environ["MEMHUB_EMBED_MODEL_PATH"]
            running.append(stack.enter_context(process_server(env))[0])
        yield running


def feed_rows(db_dsn: str) -> int:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM change_feed WHERE namespace = %s",
                            [NS]).fetchone()[0]


def committed_changes(db_dsn: str) -> Counter:
    """What the tables say was committed in NS, as (what, target_id, revision) entries."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        rows = conn.execute("""
            SELECT 'created', id, 1 FROM memories WHERE namespace = %(ns)s
            UNION ALL SELECT 'revised', memory_id, revision FROM memory_revisions
                       WHERE namespace = %(ns)s AND revision > 1
            UNION ALL SELECT 'superseded', id, current_revision FROM memories
                       WHERE namespace = %(ns)s AND status = 'SUPERSEDED'
            UNION ALL SELECT 'forgotten', id, current_revision FROM memories
                       WHERE namespace = %(ns)s AND status = 'DELETED'
            UNION ALL SELECT 'saved', id, NULL FROM handoffs WHERE namespace = %(ns)s
            UNION ALL SELECT 'taken', id, NULL FROM handoffs
                       WHERE namespace = %(ns)s AND status = 'taken'
            UNION ALL SELECT 'closed', id, NULL FROM sessions
                       WHERE namespace = %(ns)s AND status = 'closed'
        """, {"ns": NS}).fetchall()
    return Counter((what, str(target), revision) for what, target, revision in rows)


async def test_every_committed_change_is_delivered_exactly_once_under_concurrent_writers(
    servers, db_dsn, tmp_path
):
    started = time.monotonic()
    follower, tally, stop = Follower(), Tally(), asyncio.Event()
    settled = asyncio.Event()  # every writer, the straggler included, has committed
    async with AsyncExitStack() as stack:
        backend = await stack.enter_async_context(open_backend(db_dsn, tmp_path))
        clients = [await stack.enter_async_context(s.client(WEB_TOKEN)) for s in servers
                   for _ in range(MCP_WRITERS_PER_SERVER)]
        reader = await stack.enter_async_context(servers[0].client(WEB_TOKEN))

        async def mcp_writer(n: int) -> None:
            for i in range(MCP_UNITS):
                made = await unit(McpWriter(clients[n]), f"mcp{n}", i)
                tally.changes += made

        async def backend_writer(n: int) -> None:
            principal = Principal(token_id=100 + n, surface=f"bulk-{n}", namespaces=(NS,))
            bind_caller(principal)  # this task's context, as the token gate does per request
            i = 0
            while tally.changes < TARGET and time.monotonic() - started < DEADLINE / 2:
                made = await unit(BackendWriter(backend, principal), f"bulk{n}", i)
                tally.changes += made
                i += 1

        async def follow() -> None:
            cursor, quiet_since = None, None
            while True:
                page = await call(reader, "memory_changes", {"namespace": NS, "cursor": cursor,
                                                             "limit": READ_LIMIT})
                follower.delivered += page["changes"]
                cursor = page["next_cursor"]
                async with follower.read_done:
                    follower.reads += 1
                    follower.read_done.notify_all()
                if settled.is_set() and not page["changes"]:
                    # Every writer has committed; a background transaction of a server (an
                    # embedding batch, a recount) may still hold the horizon for a moment. Done
                    # when all is read, or when reads have come back empty for QUIET_SECONDS
                    # (then the comparison below says what is missing: a change the cursor
                    # passed is never delivered however long the reader waits).
                    quiet_since = quiet_since or time.monotonic()
                    if len(follower.delivered) == feed_rows(db_dsn) or \
                            time.monotonic() - quiet_since >= QUIET_SECONDS:
                        return
                    await asyncio.sleep(0.05)
                else:
                    quiet_since = None
                assert time.monotonic() - started < DEADLINE, "the reader never caught up"

        reading = asyncio.create_task(follow())
        late = asyncio.create_task(straggle(db_dsn, follower, stop))
        await asyncio.gather(*(mcp_writer(n) for n in range(len(clients))),
                             *(backend_writer(n) for n in range(BACKEND_WRITERS)))
        stop.set()
        trapped = await late
        # Only now may the reader conclude it has read everything: until the straggler's last
        # transaction commits, its entry is invisible to the count the reader compares with.
        settled.set()
        await reading

    delivered = follower.delivered
    ids = [c["change_id"] for c in delivered]
    assert len(ids) == len(set(ids)), "a change was delivered twice"
    got = Counter((c["what"], c["target_id"], c["revision"]) for c in delivered)
    expected = committed_changes(db_dsn)
    assert sum(expected.values()) >= 10_000
    assert got - expected == Counter(), "delivered something that was not committed"
    assert expected - got == Counter(), "a committed change was never delivered"
    assert sum(trapped) >= 5, f"the late-commit interleaving happened only {sum(trapped)} times"
    surfaces = Counter(c["surface"] for c in delivered)
    assert surfaces["web"] >= SERVERS * MCP_WRITERS_PER_SERVER * MCP_UNITS * 5
    assert surfaces["straggler"] == len(trapped)
