#!/usr/bin/env python3
"""What a transaction pooler costs memhub's database path.

    .venv/bin/python -m bench.pooled [--calls 400] [--out FILE]

One embedded PostgreSQL (a fresh cluster in a temp dir), 200 memories in one namespace, and
three ways to reach it from one PostgresBackend (pool 2..4): `direct` (MEMHUB_DB_POOLER=none,
the default on a direct server), `direct, pooled mode` (MEMHUB_DB_POOLER=transaction on the
same direct server: what memhub's own precautions cost, without a pooler) and `pgbouncer`
(Debian's PgBouncer 1.18 in transaction mode, pool_size 2, on loopback TCP in front of the
cluster's Unix socket; bench/pgbouncer.py). Each mode runs `--calls` rounds of: the
token gate's lookup (`authenticate`), `get_memory`, a lexical `search`, one after the other
on one client; the first 50 rounds are not counted. Storage calls in-process, no HTTP: the
figures are the database path alone. Written to bench/results/pooled-<date>-<commit>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from bench.common import default_out, machine, provenance, summary_ms, write_result
from bench.pgbouncer import pgbouncer
from memhub.config import Settings
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.embedded import EmbeddedPostgres
from memhub.storage.postgres.migrate import apply_migrations
from memhub.storage.postgres.operator.tokens import hash_token, token_prefix
from memhub.storage.principal import Principal

CALLER = Principal(token_id=1, surface="desktop-cli", namespaces=None)
TOKEN = "mh_bench_" + "1" * 32
WARMUP = 50


async def measure(dsn: str, pooler: str, calls: int, workdir: Path) -> dict:
    settings = Settings(database_url=dsn, db_pooler=pooler, data_dir=workdir,
                        pool_min_size=2, pool_max_size=4)
    backend = PostgresBackend(settings, dsn)
    await backend.open()
    try:
        await backend.pool.wait(timeout=30)
        memory_id = (await backend.list_memories(CALLER, "acme", limit=1))["memories"][0]["id"]
        times: dict[str, list[float]] = {"authenticate": [], "get_memory": [], "search": []}
        steps = {
            "authenticate": lambda: backend.authenticate(TOKEN),
            "get_memory": lambda: backend.get_memory(CALLER, "acme", memory_id=memory_id),
            "search": lambda: backend.search(CALLER, "acme", "billing exports", mode="lexical"),
        }
        for i in range(calls + WARMUP):
            for name, step in steps.items():
                started = time.perf_counter()
                await step()
                if i >= WARMUP:
                    times[name].append((time.perf_counter() - started) * 1000)
        return {name: summary_ms(values) for name, values in times.items()}
    finally:
        await backend.close()


async def seed(dsn: str, workdir: Path) -> None:
    backend = PostgresBackend(Settings(database_url=dsn, data_dir=workdir), dsn)
    await backend.open()
    try:
        for i in range(200):
            await backend.remember(CALLER, "acme",
                                   content=f"Ledger entry {i}: billing exports of region {i}")
    finally:
        await backend.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO api_tokens (surface, kind, token_hash, prefix)"
                     " VALUES ('cursor', 'scoped', %s, %s)", [hash_token(TOKEN),
                                                              token_prefix(TOKEN)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="memhub-bench-pooled-"))
    cluster = EmbeddedPostgres(workdir)
    try:
        dsn = cluster.start()
        apply_migrations(dsn)
        asyncio.run(seed(dsn, workdir))
        report = {"provenance": provenance(), "machine": machine(), "calls": args.calls,
                  "unit": "ms per call", "modes": {}}
        with pgbouncer(dsn, pool_size=2) as bouncer:
            for label, url, pooler in (("direct", dsn, "none"),
                                       ("direct, pooled mode", dsn, "transaction"),
                                       ("pgbouncer", bouncer.dsn(dsn), "transaction")):
                report["modes"][label] = asyncio.run(measure(url, pooler, args.calls, workdir))
                print(label, report["modes"][label], flush=True)
        path = write_result(args.out or default_out("pooled"), report)
        print(f"written to {path}")
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
