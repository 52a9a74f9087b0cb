"""A hybrid search holds two pooled connections at once (storage/postgres/retrieval/search.py): the
lexical leg in one transaction, the semantic leg and the stage-0 re-read in a second that waits for
the first. The second must never be held while the first is still queued for a connection: with the
pool exhausted, searches would each hold one connection and wait for another until the pool's
timeout. A pool of one connection is the sharpest case."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.conftest import make_settings
from tests.support.retrieval import WRITER, drain, embedder, open_backend

__all__ = ["embedder"]

NS = "pool"
POOL_TIMEOUT = 3.0


@pytest.mark.parametrize("with_model", [False, True], ids=["degraded", "model"])
async def test_hybrid_searches_share_a_one_connection_pool(db_dsn, tmp_path, request,
                                                           with_model):
    # Without a model hybrid degrades to lexical (no embedding to wait for): the sharpest case.
    embedder = request.getfixturevalue("embedder") if with_model else None
    settings = make_settings(db_dsn, tmp_path, pool_min_size=1, pool_max_size=1,
                             db_connect_timeout=POOL_TIMEOUT)
    async with open_backend(settings, embedder) as backend:
        target = await backend.remember(WRITER, NS, content="Redis caches the session tokens")
        await backend.remember(WRITER, NS, content="Kafka carries the billing events")
        if with_model:
            await drain(backend, embedder)
        started = time.monotonic()
        answers = await asyncio.gather(*(
            backend.search(WRITER, NS, f"redis session tokens {i}", mode="hybrid")
            for i in range(6)))
        elapsed = time.monotonic() - started
    assert elapsed < POOL_TIMEOUT / 2, elapsed
    for answer in answers:
        assert answer["degraded"] is not with_model
        assert answer["results"][0]["memory"]["id"] == target["memory"]["id"]


async def test_a_failing_lexical_leg_fails_the_search_and_frees_its_connection(
        db_dsn, tmp_path, embedder, monkeypatch):
    settings = make_settings(db_dsn, tmp_path, pool_min_size=1, pool_max_size=1,
                             db_connect_timeout=POOL_TIMEOUT)
    async with open_backend(settings, embedder) as backend:
        target = await backend.remember(WRITER, NS, content="Redis caches the session tokens")
        await drain(backend, embedder)

        async def broken(conn, query, params):
            await conn.execute("SELECT 1")
            raise LookupError("the lexical leg broke")

        monkeypatch.setattr(backend, "_lexical", broken)
        with pytest.raises(LookupError):  # the leg's own error, not a hang or a half answer
            await asyncio.wait_for(backend.search(WRITER, NS, "redis tokens"), POOL_TIMEOUT / 2)
        monkeypatch.undo()
        answer = await asyncio.wait_for(backend.search(WRITER, NS, "redis tokens"),
                                        POOL_TIMEOUT / 2)
    assert answer["results"][0]["memory"]["id"] == target["memory"]["id"]


async def test_a_cancelled_search_cancels_its_lexical_leg(db_dsn, tmp_path, embedder,
                                                         monkeypatch):
    # A client that goes away mid-search must not leave its lexical leg holding a connection.
    settings = make_settings(db_dsn, tmp_path, pool_min_size=1, pool_max_size=1,
                             db_connect_timeout=POOL_TIMEOUT)
    async with open_backend(settings, embedder) as backend:
        target = await backend.remember(WRITER, NS, content="Redis caches the session tokens")
        await drain(backend, embedder)
        reached = asyncio.Event()

        async def stuck(conn, query, params):
            reached.set()
            await asyncio.sleep(60)

        monkeypatch.setattr(backend, "_lexical", stuck)
        search = asyncio.ensure_future(backend.search(WRITER, NS, "redis tokens"))
        await asyncio.wait_for(reached.wait(), POOL_TIMEOUT)
        search.cancel()
        with pytest.raises(asyncio.CancelledError):
            await search
        monkeypatch.undo()
        answer = await asyncio.wait_for(backend.search(WRITER, NS, "redis tokens"),
                                        POOL_TIMEOUT / 2)
    assert answer["results"][0]["memory"]["id"] == target["memory"]["id"]
