#!/usr/bin/env python3
"""What the change feed's triggers (migration 0028) cost a write, and what a read costs.

    .venv/bin/python -m bench.change_feed [--writes 1500] [--writers 8] [--rounds 3]

An embedded PostgreSQL of its own (a temporary directory), migrated from scratch. Timed through
the storage backend (no HTTP, so the database's share is not drowned in the MCP layers): each
writer remembers a memory and revises it (two transactions, two changes), concurrently; the
rounds alternate with the feed's triggers enabled and disabled (ALTER TABLE ... DISABLE
TRIGGER, as the owner) so both see the same machine. Then the whole feed is read with
memory_changes, 500 a page.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from bench.common import default_out, machine, provenance, summary_ms, write_result
from memhub.config import Settings
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.embedded import EmbeddedPostgres
from memhub.storage.postgres.migrate import apply_migrations
from memhub.storage.principal import Principal

NS = "bench"
WHO = Principal(token_id=1, surface="bench", namespaces=None)
TRIGGERS = ("memories_change_feed_insert", "memories_change_feed_update")


def set_triggers(dsn: str, enabled: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in TRIGGERS:
            conn.execute(f"ALTER TABLE memories {'ENABLE' if enabled else 'DISABLE'}"
                         f" TRIGGER {name}")


async def write_round(backend: PostgresBackend, writes: int, writers: int) -> dict:
    latencies: list[float] = []
    per_writer = writes // writers

    async def writer(n: int) -> None:
        for i in range(per_writer):
            tag = uuid.uuid4().hex
            began = time.perf_counter()
            made = await backend.remember(WHO, NS, content=f"decision {n} {i} {tag}")
            latencies.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            await backend.revise(WHO, NS, made["memory"]["id"], 1,
                                 content=f"decision {n} {i} {tag} revised")
            latencies.append((time.perf_counter() - began) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(writer(n) for n in range(writers)))
    elapsed = time.perf_counter() - started
    return {"tx_per_s": round(len(latencies) / elapsed, 1), "latency_ms": summary_ms(latencies)}


async def measure(writes: int, writers: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="memhub-bench-feed-") as tmp:
        cluster = EmbeddedPostgres(Path(tmp) / "pg")
        admin = cluster.start()
        try:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("CREATE DATABASE feed")
            dsn = make_conninfo(admin, dbname="feed")
            apply_migrations(dsn)
            settings = Settings(database_url=dsn, data_dir=Path(tmp) / "data",
                                pool_max_size=writers)
            backend = PostgresBackend(settings, dsn)
            await backend.open()
            try:
                await write_round(backend, writers * 20, writers)  # warm-up
                runs: dict[str, list[dict]] = {"with_feed": [], "without_feed": []}
                for _ in range(rounds):
                    for enabled in (True, False):
                        set_triggers(dsn, enabled)
                        key = "with_feed" if enabled else "without_feed"
                        runs[key].append(await write_round(backend, writes, writers))
                set_triggers(dsn, True)
                cursor, pages, read = None, 0, 0
                started = time.perf_counter()
                while True:
                    page = await backend.memory_changes(WHO, NS, cursor=cursor, limit=500)
                    cursor, pages, read = page["next_cursor"], pages + 1, read + len(
                        page["changes"])
                    if not page["has_more"]:
                        break
                read_s = time.perf_counter() - started
            finally:
                await backend.close()
        finally:
            cluster.stop()

    def median(key: str, field: str) -> float:
        return round(statistics.median(r[field] if field == "tx_per_s" else r["latency_ms"][field]
                                       for r in runs[key]), 2)

    with_tps, without_tps = median("with_feed", "tx_per_s"), median("without_feed", "tx_per_s")
    return {
        "writes_per_round": writes, "writers": writers, "rounds": rounds, "runs": runs,
        "median_tx_per_s": {"with_feed": with_tps, "without_feed": without_tps},
        "median_p50_ms": {"with_feed": median("with_feed", "p50"),
                          "without_feed": median("without_feed", "p50")},
        "throughput_cost_pct": round(100 * (without_tps - with_tps) / without_tps, 1),
        "feed_read": {"changes": read, "pages": pages, "seconds": round(read_s, 2),
                      "changes_per_s": round(read / read_s)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1500)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = asyncio.run(measure(args.writes, args.writers, args.rounds))
    report = {"what": "the change feed's write cost and read rate", **provenance(),
              "machine": machine(), "result": result}
    path = write_result(args.out or default_out("change-feed"), report)
    print({k: v for k, v in result.items() if k != "runs"})
    print(f"written to {path}")


if __name__ == "__main__":
    main()
