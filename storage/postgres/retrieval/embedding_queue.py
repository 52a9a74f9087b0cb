"""The embedding worker: turns queued `embedding_jobs` into `memory_embeddings`.

Writes enqueue a job in their own transaction (so a write never waits on, or fails because of,
the model). This service claims due jobs with `FOR UPDATE SKIP LOCKED` (any number of workers,
in any number of processes, never take the same job), embeds each batch in ONE model call in a
thread, upserts the vectors and deletes the jobs in the same transaction. A failed job is retried
with exponential backoff (`run_after`) and dead-lettered after `MEMHUB_EMBED_MAX_ATTEMPTS`.

It wakes on `NOTIFY memhub_embedding_jobs` (a statement trigger on the queue, delivered at the
writer's COMMIT) and also polls, so a lost notification or a backoff expiring costs at most
`POLL_SECONDS`. LISTEN needs a session of its own: behind a transaction pooler it listens on
MEMHUB_DIRECT_DATABASE_URL, and without one it only polls (`PgCore.listen_dsn`).

Pacing. Writes are cheaper than their embeddings, so a steady stream of them keeps a standing
queue in front of the worker: every write is found by meaning seconds after its
acknowledgement. With MEMHUB_EMBED_MAX_LAG_SECONDS set (off by default: a bulk import would
make every client's writes wait), while the worker is more than that many seconds behind (the
newest job of a full batch had waited that long by the batch's end), `pace` holds a write's
acknowledgement, at most PACE_MAX_WAIT, until it has caught up. The write is already
committed; the CPU it would have spent on the next write goes to the queue instead, so the
rate of writes stays what the machine can embed, and the delay to searchable stays under the
bound.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ....embedding.embedder import Embedder, document_text
from ..listener import Listener
from ..queries import q
from ..rows import Conn, row_of

if TYPE_CHECKING:
    from ..core import PgCore

logger = logging.getLogger(__name__)

CHANNEL = "memhub_embedding_jobs"
POLL_SECONDS = 1.0
ERROR_BACKOFF_MAX = 30.0
# The longest a write's acknowledgement is held: a worker that cannot catch up (a burst from
# many clients on a small host) slows acknowledgements, never stops them.
PACE_MAX_WAIT = 2.0


async def process_batch(backend: PgCore, embedder: Embedder, *, batch: int, max_attempts: int,
                        after: str = "", executor: Executor | None = None) -> dict[str, Any]:
    """Claim up to `batch` due jobs, in turns across namespaces starting after the namespace
    `after` (embeddings.claim), and finish them in one transaction. The model runs on
    `executor` (default: asyncio's).

    Returns counts: claimed, embedded, skipped (retired memory, newer revision queued, or
    already embedded), failed (retried later), dead; newest_wait, the seconds the newest
    claimed job had waited when it was claimed (0 when none was); and `served`, the namespace
    the batch served last (`after` when it claimed nothing), the next batch's `after`.
    """
    model = embedder.model_name

    async def work(conn: Conn) -> dict[str, Any]:
        cur = await conn.execute(q("embeddings.claim"), {"batch": batch, "after": after})
        jobs = await cur.fetchall()
        counts: dict[str, Any] = {
            "claimed": len(jobs), "embedded": 0, "skipped": 0, "failed": 0, "dead": 0,
            "newest_wait": min((job["waited"] for job in jobs), default=0.0),
            "served": jobs[-1]["namespace"] if jobs else after}
        finished: list[int] = []
        todo: list[dict[str, Any]] = []
        for job in jobs:
            if job["memory_status"] != "ACTIVE" or job["revision"] < job["current_revision"]:
                finished.append(job["id"])  # retired, or a newer revision's job is queued
                counts["skipped"] += 1
            elif (job["embedded_model"] == model
                  and job["embedded_revision"] is not None
                  and job["embedded_revision"] >= job["current_revision"]):
                finished.append(job["id"])
                counts["skipped"] += 1
            else:
                todo.append(job)
        vectors, errors = await _embed(embedder, todo, executor)
        upserts, question_upserts = [], []
        for job, job_vectors, error in zip(todo, vectors, errors, strict=True):
            if error is None:
                # The text embedded is the row's current one, so label it with that revision.
                labels = {"memory_id": job["memory_id"], "namespace": job["namespace"],
                          "revision": job["current_revision"], "model": model}
                upserts.append({**labels, "embedding": job_vectors[0]})
                question_upserts += [{**labels, "ordinal": n, "embedding": vector}
                                     for n, vector in enumerate(job_vectors[1:], start=1)]
                finished.append(job["id"])
                counts["embedded"] += 1
            else:
                cur = await conn.execute(q("embeddings.fail_job"), {
                    "id": job["id"], "error": error, "max_attempts": max_attempts,
                })
                outcome = await row_of(cur)
                counts["dead" if outcome["status"] == "dead" else "failed"] += 1
                logger.warning(
                    "embedding job failed",
                    extra={"job_id": job["id"], "memory_id": str(job["memory_id"]),
                           "attempts": outcome["attempts"], "status": outcome["status"],
                           "error": error[:200]},
                )
        if upserts:
            # One pipelined batch instead of a round trip per vector.
            async with conn.cursor() as cur:
                await cur.executemany(q("embeddings.upsert_vector"), upserts)
                if question_upserts:
                    await cur.executemany(q("embeddings.upsert_question_vector"),
                                          question_upserts)
        if finished:
            await conn.execute(q("embeddings.delete_jobs"), {"ids": finished})
        return counts

    return await backend._run("*", work, retry_safe=False)


async def _embed(embedder: Embedder, jobs: list[dict[str, Any]], executor: Executor | None
                 ) -> tuple[list[list[Any]], list[str | None]]:
    """Per job, the vectors of its texts (the content first, then each question it answers);
    one model call for the batch. If it fails, one call per job, so a single poisonous text
    fails alone instead of taking its batch down with it."""
    if not jobs:
        return [], []
    loop = asyncio.get_running_loop()
    texts = [job_texts(job) for job in jobs]
    try:
        flat = await loop.run_in_executor(executor, embedder.embed_documents,
                                          [t for job in texts for t in job])
        out, at = [], 0
        for job in texts:
            out.append(list(flat[at:at + len(job)]))
            at += len(job)
        return out, [None] * len(jobs)
    except Exception as exc:
        if len(jobs) == 1:
            return [[]], [f"{type(exc).__name__}: {exc}"]
    vectors: list[list[Any]] = []
    errors: list[str | None] = []
    for job in texts:
        try:
            vectors.append(list(await loop.run_in_executor(executor, embedder.embed_documents,
                                                           job)))
            errors.append(None)
        except Exception as exc:
            vectors.append([])
            errors.append(f"{type(exc).__name__}: {exc}")
    return vectors, errors


def job_texts(job: dict[str, Any]) -> list[str]:
    """What a job embeds: the memory's text, then each question it answers (migration 0040)."""
    return [document_text(job["title"], job["content"]), *(job.get("questions") or [])]


async def enqueue_missing(backend: PgCore, model: str) -> int:
    """Queue a job for every live memory lacking a current vector of `model`; return how many."""

    async def work(conn: Conn) -> int:
        cur = await conn.execute(q("embeddings.enqueue_missing"), {"model": model})
        return len(await cur.fetchall())

    return await backend._run("*", work, retry_safe=False)


async def queue_counts(backend: PgCore) -> dict[str, int]:
    async def work(conn: Conn) -> dict[str, int]:
        cur = await conn.execute(q("embeddings.queue_counts"))
        return dict(await row_of(cur))

    return await backend._run("*", work, retry_safe=True)


def lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority by `nice` (Linux: a thread's nice value is its
    own); nothing where the platform cannot."""
    if nice <= 0:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):
        logger.info("embedding thread priority unchanged: not supported here")


class EmbeddingWorker:
    def __init__(self, backend: PgCore, embedder: Embedder, *, batch: int, max_attempts: int,
                 max_lag: float = 0.0, nice: int = 0,
                 record_run: Callable[[bool], None] = lambda ok: None) -> None:
        """`record_run(ok)` is called after each claim-and-embed pass (the app's metrics);
        `max_lag`: MEMHUB_EMBED_MAX_LAG_SECONDS, 0 for no pacing; `nice`:
        MEMHUB_EMBED_NICE, how much lower than the requests' the model's thread runs."""
        self.backend = backend
        # The model runs on a thread of its own, at a lower CPU priority: when requests and
        # the queue want the same cores, requests go first, and the queue takes what is left
        # (docs/retrieval.md, Embedding queue). Queries' embeddings stay on asyncio's threads.
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="memhub-embed",
                                            initializer=lower_priority, initargs=(nice,))
        self._after = ""  # the namespace the last batch served last (embeddings.claim)
        self.record_run = record_run
        self.embedder = embedder
        self.batch = batch
        self.max_attempts = max_attempts
        self.totals = {"embedded": 0, "skipped": 0, "failed": 0, "dead": 0, "batches": 0,
                       "paced_writes": 0}
        self.last_batch_ms: float | None = None
        self.max_lag = max_lag
        self.lag = 0.0  # seconds the queue is behind, as of the last batch
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        dsn = backend.listen_dsn
        self._listener = (None if dsn is None else Listener(
            dsn, CHANNEL, lambda _: self._wake.set(),
            lost="embedding listener lost; polling meanwhile"))

    @property
    def listening(self) -> bool:
        return self._listener is not None and self._listener.listening

    def status(self) -> dict[str, Any]:
        return {"running": self._task is not None and not self._task.done(),
                "listening": self.listening, "last_batch_ms": self.last_batch_ms,
                "lag_seconds": round(self.lag, 3), **self.totals}

    async def pace(self) -> None:
        """Return once the queue is at most `max_lag` seconds behind, or after PACE_MAX_WAIT
        (at once when it is, when pacing is off, or when this worker is not running)."""
        if self._caught_up.is_set() or self._task is None or self._task.done():
            return
        self.totals["paced_writes"] += 1
        try:
            await asyncio.wait_for(self._caught_up.wait(), PACE_MAX_WAIT)
        except TimeoutError:
            pass

    def _behind(self, lag: float) -> None:
        self.lag = lag
        if self.max_lag <= 0 or lag <= self.max_lag:
            self._caught_up.set()
        else:
            self._caught_up.clear()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="memhub-embedding-worker")
        if self._listener is not None:
            self._listener.start("memhub-embedding-listen")

    async def stop(self) -> None:
        self._caught_up.set()  # no write waits for a worker that is going
        if self._task is not None:
            self._task.cancel()
        if self._listener is not None:
            await self._listener.stop()
        if self._task is not None:
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        # A model call in progress finishes on its thread; nothing waits for it.
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _run(self) -> None:
        idle = False
        while not self.embedder.ready:
            if not idle and self.embedder.wait(0):
                # Jobs stay queued (no attempts burned): the model, once fetched or imported
                # (or after a restart with one), embeds them.
                logger.warning("embedding worker idle: no model",
                               extra={"state": self.embedder.state})
                idle = True
            # Quick while the model loads (a few seconds), slow while it is fetched or absent.
            await asyncio.sleep(0.05 if self.embedder.state == "loading" else 1.0)
        delay = 0.5
        requeued = False
        while True:
            try:
                if not requeued:
                    # A changed model (or a lost job) leaves vectors missing: queue them once.
                    count = await enqueue_missing(self.backend, self.embedder.model_name)
                    requeued = True
                    if count:
                        logger.info("queued re-embedding", extra={"jobs": count,
                                    "model": self.embedder.model_name})
                self._wake.clear()
                started = time.perf_counter()
                counts = await process_batch(self.backend, self.embedder, batch=self.batch,
                                             max_attempts=self.max_attempts,
                                             after=self._after, executor=self._executor)
                self._after = counts["served"]
                self.record_run(True)
                delay = 0.5
                # A full batch leaves more behind it, at least as new as its newest job.
                self._behind(counts["newest_wait"] + time.perf_counter() - started
                             if counts["claimed"] >= self.batch else 0.0)
                if counts["claimed"]:
                    self.last_batch_ms = round((time.perf_counter() - started) * 1000, 1)
                    self.totals["batches"] += 1
                    for key in ("embedded", "skipped", "failed", "dead"):
                        self.totals[key] += int(counts[key])
                if counts["claimed"] < self.batch:
                    try:
                        await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)
                    except TimeoutError:
                        pass
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.record_run(False)
                self._behind(0.0)  # nothing measured: never hold writes on a failing worker
                logger.warning("embedding worker error; backing off",
                               extra={"error": f"{type(exc).__name__}: {exc}"[:300],
                                      "seconds": delay})
                await asyncio.sleep(delay)
                delay = min(delay * 2, ERROR_BACKOFF_MAX)
