"""Embed whatever is missing: queue a job for every live memory without a current vector of the
configured model, then work the queue to empty with a progress bar.

    .venv/bin/python scripts/backfill_embeddings.py [--retry-dead] [--batch N]

Uses the same settings as the server (DATABASE_URL, or the embedded cluster in MEMHUB_DATA_DIR;
MEMHUB_EMBED_MODEL / MEMHUB_EMBED_MODEL_PATH). Safe beside a running server: jobs are claimed
with SKIP LOCKED, so the two never embed the same memory at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from storage.embedding_worker import (  # noqa: E402
    enqueue_missing,
    process_batch,
    queue_counts,
)
from storage.queries import q  # noqa: E402


async def backfill(backend, embedder, *, batch: int = 64, max_attempts: int = 5,
                   retry_dead: bool = False, progress: bool = True) -> dict[str, Any]:
    """Queue missing vectors and drain the due queue. Returns counts."""
    from tqdm import tqdm

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
                report[key] += counts[key]
            bar.update(counts["claimed"])
    report["pending_after"] = (await queue_counts(backend))["pending"]
    return report


async def _main(args) -> int:
    from app import _database
    from config import Settings
    from storage.embedder import Embedder
    from storage.migrate import apply_migrations
    from storage.postgres import PostgresBackend

    settings = Settings()
    async with AsyncExitStack() as stack:
        dsn = await _database(settings, stack)
        await asyncio.to_thread(apply_migrations, dsn)
        backend = PostgresBackend(settings, dsn)
        await backend.open()
        stack.push_async_callback(backend.close)
        embedder = Embedder(settings)
        embedder.start()
        await asyncio.to_thread(embedder.wait, 300)
        if not embedder.ready:
            print(f"embedding model not available: {embedder.status()}", file=sys.stderr)
            return 2
        report = await backfill(backend, embedder, batch=args.batch or settings.embed_batch_size,
                                max_attempts=settings.embed_max_attempts,
                                retry_dead=args.retry_dead)
    print(report)
    return 0 if report["failed"] == 0 and report["dead"] == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--retry-dead", action="store_true",
                        help="give dead-lettered jobs a fresh set of attempts first")
    parser.add_argument("--batch", type=int, default=0, help="texts per model call")
    raise SystemExit(asyncio.run(_main(parser.parse_args())))


if __name__ == "__main__":
    main()
