#!/usr/bin/env python3
"""What a read as of a past time costs against the same read of the present.

    .venv/bin/python -m bench.as_of [--memories 3000] [--queries 100] [--out FILE]

One namespace of `--memories` memories (bench/search.py's generator, inserted in bulk and
embedded by the real worker), then a history written through MCP: a tenth of them revised,
a twentieth superseded, a fiftieth forgotten. The instant in the middle of that history is
the `as_of` every past read asks for, so a past read meets memories current then at an older
revision, memories retired since and memories born since.

Measured end to end through a real MCP client over HTTP (the query embedding included, each
query new), present and past calls interleaved so both see the same machine: memory_search
(hybrid), memory_list (50) and memory_context (query, 2,000 tokens); p50/p95/p99 of each.
The report (date, commit, machine) goes to bench/results/ unless --out says otherwise. Needs
MEMHUB_EMBED_MODEL_PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time

import psycopg

from bench.common import (
    default_out,
    local_memhub,
    machine,
    mcp_client,
    provenance,
    summary_ms,
    wait_embedded,
    write_result,
)
from bench.search import NAMESPACE, bulk_insert, queries, synthetic


async def write_history(base_url: str, dsn: str, count: int) -> str:
    """Revise, supersede and forget a share of the memories through MCP; return the instant
    (the database's clock, ISO 8601) half way through."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids = [str(r[0]) for r in conn.execute(
            "SELECT id FROM memories WHERE namespace = %s ORDER BY seq", [NAMESPACE])]
    rng = random.Random(3)
    picked = rng.sample(ids, count // 10 + count // 20 + count // 50)
    revise = picked[:count // 10]
    supersede = picked[count // 10:count // 10 + count // 20]
    forget = picked[count // 10 + count // 20:]
    steps = ([("revise", i) for i in revise] + [("supersede", i) for i in supersede]
             + [("forget", i) for i in forget])
    rng.shuffle(steps)
    middle = ""
    async with mcp_client(base_url) as client:
        for n, (what, mid) in enumerate(steps):
            if n == len(steps) // 2:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    middle = conn.execute("SELECT now()").fetchone()[0].isoformat()
            if what == "revise":
                item = synthetic(10**6 + n, rng)
                await client.call_tool("memory_revise", {
                    "namespace": NAMESPACE, "id": mid, "expected_revision": 1,
                    "content": item["content"]})
            elif what == "supersede":
                await client.call_tool("memory_remember", {
                    "namespace": NAMESPACE, **synthetic(2 * 10**6 + n, rng),
                    "supersedes": [mid]})
            else:
                await client.call_tool("memory_forget", {"namespace": NAMESPACE, "id": mid,
                                                         "reason": "benchmark history"})
        await wait_embedded(client)
    return middle


async def timed(base_url: str, calls: list[tuple[str, str, dict]]) -> dict[str, list[float]]:
    """Each call's latency (ms) by label; `calls`: (label, tool, arguments), in order."""
    out: dict[str, list[float]] = {}
    async with mcp_client(base_url) as client:
        await client.call_tool("memory_search", {"namespace": NAMESPACE, "query": "warm up"})
        for label, tool, arguments in calls:
            started = time.perf_counter()
            await client.call_tool(tool, arguments)
            out.setdefault(label, []).append((time.perf_counter() - started) * 1000)
    return out


async def bench(args: argparse.Namespace) -> dict:
    report: dict = {"benchmark": "as_of", **provenance(), "machine": machine(),
                    "memories": args.memories, "queries": args.queries}
    with local_memhub(embed_model_path=os.environ.get("MEMHUB_EMBED_MODEL_PATH")) as (
            base_url, _settings, dsn):
        bulk_insert(dsn, 0, args.memories)
        async with mcp_client(base_url) as client:
            await wait_embedded(client)
        as_of = await write_history(base_url, dsn, args.memories)
        report["as_of"] = as_of
        calls: list[tuple[str, str, dict]] = []
        for text in queries(args.queries, seed=11):
            for label, extra in (("present", {}), ("as_of", {"as_of": as_of})):
                calls.append((f"search_{label}", "memory_search",
                              {"namespace": NAMESPACE, "query": text, **extra}))
                calls.append((f"list_{label}", "memory_list",
                              {"namespace": NAMESPACE, "limit": 50, **extra}))
                calls.append((f"context_{label}", "memory_context",
                              {"namespace": NAMESPACE, "query": text, **extra}))
        latencies = await timed(base_url, calls)
        report["e2e_ms"] = {label: summary_ms(v) for label, v in sorted(latencies.items())}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/as-of-DATE-COMMIT.json)")
    args = parser.parse_args()
    report = asyncio.run(bench(args))
    out = write_result(args.out or default_out("as-of"), report)
    print(json.dumps(report, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
