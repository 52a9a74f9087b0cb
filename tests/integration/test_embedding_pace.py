"""Pacing (storage/postgres/retrieval/embedding_queue.py): while the embedding queue is further
behind than MEMHUB_EMBED_MAX_LAG_SECONDS, a write's acknowledgement waits until the worker has
caught up, so a write is found by meaning soon after it is acknowledged; with the bound at 0
nothing ever waits."""

from __future__ import annotations

import asyncio
import time

from memhub.storage.postgres.retrieval.embedding_queue import EmbeddingWorker
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.mcp import call
from tests.support.retrieval import WRITER, embedder, open_backend, owner_execute
from tests.support.server import thread_server

__all__ = ["embedder"]

NS = "pace"
TOPICS = ("ledger postings", "webhook retries", "payout rails", "session timeouts",
          "feature flags", "database migrations")


def pending(dsn: str) -> int:
    return owner_execute(dsn, "SELECT count(*) FROM embedding_jobs")[0][0]


async def queue_then_start(backend, embedder, jobs: int, max_lag: float) -> EmbeddingWorker:
    """`jobs` writes queued before a worker exists, then the worker, once it has finished
    its first (full) batch: the queue is behind by the time those jobs have waited."""
    for i in range(jobs):
        await backend.remember(WRITER, NS, content=f"Note {i} on {TOPICS[i % len(TOPICS)]}: "
                                                   f"the team settled detail number {i}.")
    await asyncio.sleep(0.1)
    worker = EmbeddingWorker(backend, embedder, batch=2, max_attempts=5, max_lag=max_lag)
    await worker.start()
    deadline = time.monotonic() + 60
    while worker.totals["batches"] == 0:
        assert time.monotonic() < deadline, "the worker never finished a batch"
        await asyncio.sleep(0.002)
    return worker


async def test_a_write_waits_while_the_queue_is_behind_and_goes_once_it_caught_up(
    settings, db_dsn, embedder
):
    async with open_backend(settings, embedder) as backend:
        worker = await queue_then_start(backend, embedder, 60, max_lag=0.05)
        try:
            assert worker.lag > 0.05 and pending(db_dsn) > 0
            await worker.pace()
            assert pending(db_dsn) == 0  # it returned because the queue drained
            assert worker.totals["paced_writes"] == 1 and worker.lag == 0.0
            started = time.monotonic()
            await worker.pace()  # caught up: no wait
            assert time.monotonic() - started < 0.05
            assert worker.totals["paced_writes"] == 1
        finally:
            await worker.stop()


async def test_with_no_bound_a_write_never_waits(settings, db_dsn, embedder):
    async with open_backend(settings, embedder) as backend:
        worker = await queue_then_start(backend, embedder, 60, max_lag=0.0)
        try:
            await worker.pace()
            assert pending(db_dsn) > 0 and worker.totals["paced_writes"] == 0
        finally:
            await worker.stop()


async def test_memory_remember_and_revise_are_paced_through_mcp(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, embed_batch_size=1,
                             embed_max_lag_seconds=0.001)
    with thread_server(settings) as server:
        worker = server.app.state.runtime.embedding_worker
        deadline = time.monotonic() + 120
        while not worker.embedder.ready:
            assert time.monotonic() < deadline, "the model never loaded"
            await asyncio.sleep(0.05)
        async with server.client(WEB_TOKEN) as client:
            written = []
            for i in range(30):
                written.append(await call(client, "memory_remember", {
                    "namespace": NS, "content": f"Paced note {i} about "
                                                f"{TOPICS[i % len(TOPICS)]}."}))
            remembered = worker.totals["paced_writes"]
            first = written[0]["memory"]
            revised = await call(client, "memory_revise", {
                "namespace": NS, "id": first["id"], "expected_revision": 1,
                "content": "Paced note 0, reworded."})
    assert all(w["outcome"] == "created" for w in written) and revised["outcome"] == "revised"
    assert remembered > 0, worker.status()
