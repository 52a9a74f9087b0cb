#!/usr/bin/env python3
"""What a Prometheus scrape of GET /metrics costs, with the embedding queue empty and backed up.

    .venv/bin/python -m bench.metrics_scrape [--backlogs 0,10000,200000] [--reps 50]

One fresh memhub (its own process on embedded PostgreSQL, bench/common.py), the embedding
worker off so the queue stays as built. For each backlog (jobs inserted straight into
`embedding_jobs`, all due): the queue read /metrics makes (`embedding_queue_state`, capped at
storage/postgres/operator/vitals.QUEUE_COUNT_CAP) timed through a PostgresBackend of this process,
beside the uncapped count `stats` and backfill use (`queue_counts`) for scale; then whole
scrapes over HTTP, served from the 5 s cache and (one per cache period) with the read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import httpx
import psycopg

from bench.common import (
    default_out,
    local_memhub,
    machine,
    mcp_client,
    provenance,
    summary_ms,
    write_result,
)
from memhub.metrics import QUEUE_CACHE_SECONDS
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.retrieval.embedding_queue import queue_counts

METRICS_TOKEN = "bench-metrics-" + "0" * 24


async def timed(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        started = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def fill_queue(dsn: str, memory_id: str, jobs: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM embedding_jobs")
        conn.execute("INSERT INTO embedding_jobs (namespace, memory_id, revision, run_after)"
                     " SELECT 'bench', %s, 1, now() - interval '1 minute'"
                     " FROM generate_series(1, %s)", [memory_id, jobs])
        conn.execute("VACUUM ANALYZE embedding_jobs")


async def measure(backlogs: list[int], reps: int) -> dict[str, object]:
    rows = []
    with local_memhub(metrics_token=METRICS_TOKEN, embed_worker=False) as (base, settings, dsn):
        async with mcp_client(base) as client:
            made = await client.call_tool("memory_remember", {
                "namespace": "bench", "content": "A memory the queued jobs point at."})
        memory_id = made.structured_content["memory"]["id"]
        backend = PostgresBackend(settings, dsn)
        await backend.open()
        headers = {"authorization": f"Bearer {METRICS_TOKEN}"}
        try:
            async with httpx.AsyncClient(timeout=30, headers=headers) as http:
                for jobs in backlogs:
                    fill_queue(dsn, memory_id, jobs)
                    state = await backend.embedding_queue_state()
                    read = await timed(backend.embedding_queue_state, reps)
                    full = await timed(lambda: queue_counts(backend), max(3, reps // 10))
                    # The first scrape after a cache period pays for the read.
                    await asyncio.sleep(QUEUE_CACHE_SECONDS)
                    cold = await timed(lambda: http.get(f"{base}/metrics"), 1)
                    warm = await timed(lambda: http.get(f"{base}/metrics"), reps)
                    size = len((await http.get(f"{base}/metrics")).content)
                    rows.append({"jobs": jobs, "state": state,
                                 "queue_read_ms": summary_ms(read),
                                 "uncapped_count_ms": summary_ms(full),
                                 "scrape_with_read_ms": round(cold[0], 2),
                                 "scrape_cached_ms": summary_ms(warm),
                                 "body_bytes": size})
                    print(json.dumps(rows[-1]), flush=True)
        finally:
            await backend.close()
    return {"machine": machine(), **provenance(), "reps": reps, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backlogs", default="0,10000,200000")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    backlogs = [int(b) for b in args.backlogs.split(",")]
    report = asyncio.run(measure(backlogs, args.reps))
    path = write_result(args.out or default_out("metrics-scrape"), report)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
