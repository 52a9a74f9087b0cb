"""50 writers revise one memory with the same expected revision, released together.

Exactly one wins; the other 49 get a CONFLICT error whose details carry the winner's revision,
content, author and time, and the database agrees. First a fixture proves the pool really
hands out 50 distinct backends, or the test could pass by running five sequential waves of ten.
"""

from __future__ import annotations

import asyncio
import json
import os

import psycopg
import pytest

from memhub.errors import MemhubError
from tests.support import db
from tests.support.memories import DESKTOP, NS, open_backend
from tests.support.server import process_server

WRITERS = 50


@pytest.fixture
async def wide_backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, pool_max_size=WRITERS + 5) as backend:
        yield backend


@pytest.fixture
async def proven_wide_backend(wide_backend):
    """The backend, after proving its pool holds WRITERS distinct server backends at once."""
    barrier = asyncio.Barrier(WRITERS)

    async def hold() -> int:
        async with wide_backend.pool.connection() as conn:
            pid = (await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone())["pid"]
            await asyncio.wait_for(barrier.wait(), timeout=30)
            return pid

    pids = await asyncio.gather(*(hold() for _ in range(WRITERS)))
    assert len(set(pids)) == WRITERS
    return wide_backend


def _db_state(dsn: str, memory_id: str) -> tuple[int, int, int]:
    with psycopg.connect(dsn) as conn:
        current = conn.execute("SELECT current_revision FROM memories WHERE id = %s",
                               [memory_id]).fetchone()[0]
        currents = conn.execute("SELECT count(*) FROM memory_revisions WHERE memory_id = %s"
                                " AND is_current", [memory_id]).fetchone()[0]
        total = conn.execute("SELECT count(*) FROM memory_revisions WHERE memory_id = %s",
                             [memory_id]).fetchone()[0]
    return current, currents, total


def _check(outcomes: list[dict], dsn: str, memory_id: str) -> None:
    """Each outcome is an answer ({"outcome", ...}) or an error payload ({"code", ...})."""
    revised = [o for o in outcomes if o.get("outcome") == "revised"]
    errors = [o for o in outcomes if "code" in o]
    assert len(revised) == 1, outcomes
    assert len(errors) == WRITERS - 1, outcomes
    assert {e["code"] for e in errors} == {"CONFLICT"}
    assert all(e["remedy"] for e in errors)
    winner = revised[0]["memory"]
    for lost in (e["details"] for e in errors):
        assert (lost["id"], lost["status"], lost["expected_revision"]) == (memory_id, "ACTIVE", 1)
        assert lost["current_revision"] == winner["revision"] == 2
        assert lost["current_content"] == winner["content"]
        assert lost["current_author"] == winner["author_client"]
        assert lost["current_at"] == winner["updated_at"]
    assert _db_state(dsn, memory_id) == (2, 1, 2)


async def test_fifty_concurrent_revisions_of_one_revision_yield_one_winner(
    proven_wide_backend, db_dsn
):
    backend = proven_wide_backend
    memory = (await backend.remember(DESKTOP, NS, content="contended"))["memory"]
    barrier = asyncio.Barrier(WRITERS)

    async def writer(i: int) -> dict:
        await asyncio.wait_for(barrier.wait(), timeout=30)
        try:
            return await backend.revise(DESKTOP, NS, memory["id"], 1, content=f"writer {i}")
        except MemhubError as err:
            return err.to_payload()

    outcomes = await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    _check(outcomes, db_dsn, memory["id"])


@pytest.mark.slow
async def test_fifty_mcp_clients_on_two_server_processes_yield_one_winner(db_dsn, tmp_path):
    token = db.insert_token(db_dsn, "cursor")
    env = {
        "DATABASE_URL": db_dsn,
        "MCP_AUTH_TOKEN": "mh_test_two_process_web_token_0123",
        "MEMHUB_POOL_MAX_SIZE": str(WRITERS // 2 + 10),
        "MEMHUB_EMBED_WORKER": "false",
        "MEMHUB_DATA_DIR": str(tmp_path),
        # Many clients on one token at once: the database is under test here, not the token's
        # in-flight limit (docs/operations.md#per-token-and-per-namespace).
        "MEMHUB_TOKEN_MAX_IN_FLIGHT": "100",
    }
    if os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        env["MEMHUB_EMBED_MODEL_PATH"] = os.environ["MEMHUB_EMBED_MODEL_PATH"]
    with process_server(env) as (one, _), process_server(env) as (two, _):
        async with one.client(token) as c:
            created = await c.call_tool("memory_remember", {"namespace": NS,
                                                            "content": "contended"})
        memory_id = created.structured_content["memory"]["id"]
        barrier = asyncio.Barrier(WRITERS)
        connected = asyncio.Barrier(WRITERS)

        async def writer(i: int) -> dict:
            server = one if i % 2 else two
            async with server.client(token) as client:
                await asyncio.wait_for(connected.wait(), timeout=60)
                await asyncio.wait_for(barrier.wait(), timeout=60)
                result = await client.call_tool("memory_revise", {
                    "namespace": NS, "id": memory_id, "expected_revision": 1,
                    "content": f"writer {i}"}, raise_on_error=False)
                if result.is_error:
                    return json.loads(result.content[0].text)
                return result.structured_content

        outcomes = await asyncio.gather(*(writer(i) for i in range(WRITERS)))
    _check(outcomes, db_dsn, memory_id)
    json.dumps(outcomes)  # what went over the wire is plain JSON
