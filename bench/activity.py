#!/usr/bin/env python3
"""What recording a tool call in the activity log (migration 0047) costs the call, buffered as
memhub does it or written inline as it could have been.

    .venv/bin/python -m bench.activity [--calls 2000] [--records 100000]

An embedded PostgreSQL of its own (a temporary directory), migrated from scratch, driven
through the storage backend. Timed:

- `record`: what the tool middleware does per call (storage/activity.py: build the row,
  append it to the bounded buffer), in process;
- `insert_own_transaction`: writing that one row before the call is answered, in a
  transaction of its own (what an unbuffered log would add to every call);
- `insert_in_open_transaction`: one INSERT statement inside a transaction that is already
  open (what "one insert in the tool's own transaction" would add, for the tools that have
  exactly one);
- `batch_of_1000`: one batch as the background writer sends it, per row.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from bench.common import default_out, machine, provenance, summary_ms, write_result
from memhub.config import Settings
from memhub.storage.activity import BATCH_ROWS, ActivityBuffer, tool_event
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.embedded import EmbeddedPostgres
from memhub.storage.postgres.migrate import apply_migrations
from memhub.storage.postgres.queries import q

NS = "bench"


def event():
    return tool_event("memory_search", NS, surface="bench", token_id=1,
                      may_see=lambda ns: True, error_code=None, seconds=0.012)


def time_records(n: int) -> float:
    """Microseconds per call of what the middleware does."""
    buffer = ActivityBuffer(capacity=n)
    started = time.perf_counter()
    for _ in range(n):
        buffer.record(event())
    return (time.perf_counter() - started) / n * 1e6


async def measure(calls: int, records: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="memhub-bench-activity-") as tmp:
        cluster = EmbeddedPostgres(Path(tmp) / "pg")
        admin = cluster.start()
        try:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("CREATE DATABASE activity")
            dsn = make_conninfo(admin, dbname="activity")
            apply_migrations(dsn)
            backend = PostgresBackend(Settings(database_url=dsn, data_dir=Path(tmp) / "data"),
                                      dsn)
            await backend.open()
            try:
                await backend.write_tool_events([event() for _ in range(100)])  # warm-up
                own: list[float] = []
                for _ in range(calls):
                    began = time.perf_counter()
                    await backend.write_tool_events([event()])
                    own.append((time.perf_counter() - began) * 1000)
                one = event()
                params = {"namespaces": [one.namespace], "tools": [one.tool],
                          "surfaces": [one.surface], "token_ids": [one.token_id],
                          "error_codes": [one.error_code], "durations": [one.duration_ms],
                          "ages": [0.0]}
                inside: list[float] = []
                async with backend.connection() as conn, conn.transaction():
                    await conn.execute("SELECT set_config('memhub.namespaces', '*', true)")
                    for _ in range(calls):
                        began = time.perf_counter()
                        await conn.execute(q("activity.write"), params)
                        inside.append((time.perf_counter() - began) * 1000)
                batches: list[float] = []
                for _ in range(20):
                    rows = [event() for _ in range(BATCH_ROWS)]
                    began = time.perf_counter()
                    await backend.write_tool_events(rows)
                    batches.append((time.perf_counter() - began) * 1000)
            finally:
                await backend.close()
        finally:
            cluster.stop()
    batch = summary_ms(batches)
    return {
        "calls": calls,
        "record_us": round(time_records(records), 2),
        "insert_own_transaction_ms": summary_ms(own),
        "insert_in_open_transaction_ms": summary_ms(inside),
        "batch_of_1000_ms": batch,
        "batch_per_row_us": round(batch["p50"] / BATCH_ROWS * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = asyncio.run(measure(args.calls, args.records))
    report = {"what": "what recording a tool call in the activity log costs", **provenance(),
              "machine": machine(), "result": result}
    path = write_result(args.out or default_out("activity"), report)
    print(result)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
