"""`memhub-admin backfill`: embed whatever is missing, with a progress bar.

Queues a job for every live memory without a current vector of the configured model, then
works the queue to empty. Safe beside a running server: jobs are claimed with SKIP LOCKED, so
the two never embed the same memory at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tqdm import tqdm

from ..embedding.embedder import Embedder
from ..errors import MODEL_IMPORT_COMMAND, ModelAbsent, Unavailable
from ..storage.postgres.queries import q
from ..storage.postgres.retrieval.embedding_queue import (
    enqueue_missing,
    process_batch,
    queue_counts,
)

MODEL_LOAD_WAIT = 300.0  # seconds; a cold load takes a few


async def backfill(backend, embedder: Embedder, *, batch: int = 64, max_attempts: int = 5,
                   retry_dead: bool = False, progress: bool = True) -> dict[str, Any]:
    """Queue missing vectors and drain the due queue. Returns counts."""
    requeued = 0
    if retry_dead:
        async def revive(conn):
            cur = await conn.execute(q("embeddings.requeue_dead"))
            return len(await cur.fetchall())

        requeued = await backend._run("*", revive, retry_safe=False)
    queued = await enqueue_missing(backend, embedder.model_name)
    total = (await queue_counts(backend))["due"]
    report = {"queued": queued, "requeued_dead": requeued, "embedded": 0, "skipped": 0,
              "failed": 0, "dead": 0}
    with tqdm(total=total, unit="job", desc="embedding", disable=not progress) as bar:
        while True:
            counts = await process_batch(backend, embedder, batch=batch,
                                         max_attempts=max_attempts)
            if counts["claimed"] == 0:
                break
            for key in ("embedded", "skipped", "failed", "dead"):
                report[key] += int(counts[key])
            bar.update(counts["claimed"])
    report["pending_after"] = (await queue_counts(backend))["pending"]
    return report


async def run(backend, settings, *, batch: int, retry_dead: bool, progress: bool
              ) -> dict[str, Any]:
    """Load the model where the server finds it (MODEL_ABSENT or UNAVAILABLE if it cannot be;
    a command never fetches it), then `backfill`."""
    embedder = Embedder(settings)
    embedder.start()
    await asyncio.to_thread(embedder.wait, MODEL_LOAD_WAIT)
    if not embedder.ready:
        status = embedder.status()
        message = (f"the embedding model is {status['state']}: "
                   f"{status.get('detail') or status.get('reason', 'unknown')}")
        if status["state"] == "absent":
            raise ModelAbsent(message)
        raise Unavailable(message, remedy=f"Fix: {status.get('fix', MODEL_IMPORT_COMMAND)}.")
    return await backfill(backend, embedder, batch=batch or settings.embed_batch_size,
                          max_attempts=settings.embed_max_attempts, retry_dead=retry_dead,
                          progress=progress)
