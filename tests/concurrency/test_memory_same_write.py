"""Many clients sending the same write at the same instant.

Dedup (same content, anyone) and idempotency (same client_request_id, one surface) are
different mechanisms; under contention each must still produce exactly one memory, and no
caller may see an error.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from tests.support.memories import CURSOR, DESKTOP, NS, open_backend

N = 20


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, pool_max_size=N + 5) as b:
        yield b


def count(dsn: str, sql: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchone()[0]


async def test_concurrent_identical_assertions_make_one_memory_and_corroborate(backend, db_dsn):
    barrier = asyncio.Barrier(N)

    async def assert_fact(i: int) -> dict:
        await asyncio.wait_for(barrier.wait(), timeout=30)
        who = DESKTOP if i % 2 else CURSOR
        punctuation = "." * (i % 3)
        content = f"The API is versioned in the URL{punctuation}"
        return await backend.remember(who, NS, content=content)

    outcomes = await asyncio.gather(*(assert_fact(i) for i in range(N)))
    assert sorted(o["outcome"] for o in outcomes).count("created") == 1
    assert {o["outcome"] for o in outcomes} == {"created", "deduplicated"}
    assert len({o["memory"]["id"] for o in outcomes}) == 1
    assert count(db_dsn, "SELECT count(*) FROM memories") == 1
    # The other surface corroborated exactly once; the author's repeats are not evidence.
    assert count(db_dsn, "SELECT count(*) FROM memory_corroborations") == 1


async def test_concurrent_requests_with_one_request_id_write_once_and_replay(backend, db_dsn):
    barrier = asyncio.Barrier(N)

    async def send(_: int) -> dict:
        await asyncio.wait_for(barrier.wait(), timeout=30)
        return await backend.remember(DESKTOP, NS, content="once", client_request_id="same")

    outcomes = await asyncio.gather(*(send(i) for i in range(N)))
    assert [o["outcome"] for o in outcomes].count("created") == 1
    assert [o["outcome"] for o in outcomes].count("replayed") == N - 1
    assert len({o["memory"]["id"] for o in outcomes}) == 1
    assert count(db_dsn, "SELECT count(*) FROM memories") == 1
    assert count(db_dsn, "SELECT count(*) FROM idempotency_keys") == 1
