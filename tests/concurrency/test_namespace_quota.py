"""Writers racing for a namespace's last slot: exactly one gets it.

The race is made certain, not hoped for: the test holds a lock on `embedding_jobs` (which
every memory write inserts into after its memory row), so each writer runs up to that point,
past wherever a quota check could be, and stops there, until every one of them is waiting on a
lock. Released together, they commit as fast as they can. A check that read the use and then
wrote (in Python, or in SQL without the quota row's lock) lets them all through; the counter
updated under the row's lock lets one.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from memhub.errors import MemhubError
from memhub.storage.admin import Actor
from tests.support.memories import DESKTOP, NS, open_backend
from tests.support.wait import until

WRITERS = 12


@pytest.fixture
async def wide_backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, pool_max_size=WRITERS + 4) as backend:
        yield backend


def waiting_on_locks(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                            ).fetchone()[0]


@pytest.mark.parametrize("limit", ["memories", "bytes"])
async def test_writers_racing_for_the_last_slot_leave_the_namespace_at_its_quota(
        wide_backend, db_dsn, limit):
    backend = wide_backend
    await backend.remember(DESKTOP, NS, content="the first memory")
    use = await backend.namespace_quota(NS)
    await backend.set_namespace_quota(
        Actor("cli:test", "local"), NS,
        max_memories=use["memories"] + 1 if limit == "memories" else None,
        max_bytes=use["bytes"] + len("racer 00000") if limit == "bytes" else None)

    async def write(i: int) -> dict:
        try:
            return await backend.remember(DESKTOP, NS, content=f"racer {i:05d}")
        except MemhubError as err:
            return err.to_payload()

    with psycopg.connect(db_dsn) as gate:
        gate.execute("LOCK TABLE embedding_jobs IN SHARE MODE")
        racers = [asyncio.create_task(write(i)) for i in range(WRITERS)]

        async def all_stopped() -> bool:
            return await asyncio.to_thread(waiting_on_locks, db_dsn) >= WRITERS

        await until(all_stopped, timeout=60, what=f"{WRITERS} writers waiting on a lock")
        gate.commit()
        outcomes = await asyncio.gather(*racers)

    created = [o for o in outcomes if o.get("outcome") == "created"]
    refused = [o for o in outcomes if o.get("code") == "QUOTA_EXCEEDED"]
    assert (len(created), len(refused)) == (1, WRITERS - 1), outcomes
    assert all(r["details"]["limit"] == limit for r in refused)
    with psycopg.connect(db_dsn) as conn:
        live = conn.execute("SELECT count(*) FROM memories WHERE namespace = %s",
                            [NS]).fetchone()[0]
        jobs = conn.execute("SELECT count(*) FROM embedding_jobs WHERE namespace = %s",
                            [NS]).fetchone()[0]
        kept = conn.execute("SELECT used_memories, used_bytes FROM namespace_quotas").fetchone()
        counted = conn.execute("SELECT memories, bytes FROM memhub_namespace_use(%s)",
                               [NS]).fetchone()
    assert live == jobs == 2
    assert kept == counted
