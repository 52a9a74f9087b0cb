#!/usr/bin/env python3
"""Many tenants on one memhub: memory in every load pattern, fairness, scale, concurrency.

    .venv/bin/python -m bench.tenants [--patterns load,backlog,import,noisy,scale,many,
                                       concurrency] [--set NAME=VALUE ...] [--out FILE]

Each pattern starts a fresh memhub (its own process on embedded PostgreSQL, bench/common.py)
and drives it through real MCP clients over HTTP; the server's peak RSS is the kernel's VmHWM
of its process, read at the end of the pattern. Corpus: bench/project_corpus.py's notes, a
quarter of them long (~250 tokens), each written through MCP with three questions it answers
(three more vectors: migration 0040). Patterns:

- load / load-cold: 2,000 writes from 4 clients starting as soon as /healthz answers, while
  the model loads (load-cold: into an empty MEMHUB_MODEL_CACHE_DIR, so the 8-bit query copy and
  the mapped copies are made too); peak RSS once the queue is drained.
- backlog: 20,000 memories queued for embedding at once (COPY with their jobs, as a restore or
  a bulk load leaves them), drained by the server's worker; peak RSS.
- import: `memhub-admin import` (admin/import_.py, run by this process as the command would) of
  a 50,000-memory export into namespace `import`; while its embeddings are worked off, a second
  namespace writes a memory every 0.5 s and searches for it by meaning until found: the delay
  per write (p50/p95/max), and peak RSS.
- noisy: tenant B (200 memories) searches alone (`--quiet-searches` hybrid searches, each query
  new), then the same count while 12 clients of tenant A flood it with memory_remember and
  memory_search, half each: B's p50/p95 in both phases, their ratio, B's errors.
- scale: a 200-memory tenant's semantic and hybrid top 10 for 100 queries alone, then beside a
  100,000-memory neighbour (bulk-loaded with precomputed vectors: bench/tenant_corpus.py):
  overlap with its results alone and with an exact scan, latency alone and beside; the
  neighbour's own hybrid and semantic p50; pgvector's filtered HNSW scan (ef_search,
  iterative scans, max_scan_tuples) for namespaces of 200 to 30,000 beside it, in SQL.
- many: 300,000 memories in 100 namespaces of 20 to 50,000 (bulk-loaded with precomputed
  vectors); search p50/p99 and write rate per namespace size.
- concurrency: one client, then 32 clients over 16 namespaces, each mixing memory_remember
  (keyed, a tenth re-sent with the same client_request_id), memory_revise, memory_search and
  memory_context for `--seconds` (60); errors, pool timeouts (UNAVAILABLE), every keyed write
  checked (exactly one ACTIVE memory per acknowledged key, with its content; every replay the
  same memory), throughput and p50/p99 per operation; peak RSS.

Needs MEMHUB_EMBED_MODEL_PATH. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from bench import tenant_patterns
from bench.common import default_out, machine, provenance, write_result

PATTERNS = {
    "load": tenant_patterns.load,
    "load-cold": tenant_patterns.load_cold,
    "backlog": tenant_patterns.backlog,
    "import": tenant_patterns.import_,
    "noisy": tenant_patterns.noisy,
    "scale": tenant_patterns.scale,
    "many": tenant_patterns.many,
    "concurrency": tenant_patterns.concurrency,
}


async def bench(args) -> dict:
    overrides = {"embed_model_path": os.environ["MEMHUB_EMBED_MODEL_PATH"]}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name.lower().removeprefix("memhub_")] = value
    report: dict = {"machine": machine(), **provenance(), "settings": overrides,
                    "patterns": {}}
    for name in args.patterns.split(","):
        started = time.monotonic()
        load_before = os.getloadavg()
        print(f"== {name}", flush=True)
        result = await PATTERNS[name](args, overrides)
        result["load_average"] = {"before": load_before, "after": os.getloadavg()}
        result["seconds"] = round(time.monotonic() - started)
        report["patterns"][name] = result
        print(f"{name}: {tenant_patterns.headline(name, result)}", flush=True)
        if args.out_partial:
            write_result(args.out_partial, report)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a server setting, e.g. --set max_active_calls=0")
    parser.add_argument("--load-writes", type=int, default=2000)
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--import-size", type=int, default=50_000)
    parser.add_argument("--quiet-searches", type=int, default=300)
    parser.add_argument("--flooders", type=int, default=12)
    parser.add_argument("--neighbour", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/tenants-DATE-COMMIT.json)")
    parser.add_argument("--out-partial", default=None,
                        help="rewrite this file after each pattern")
    args = parser.parse_args()
    if not os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        print("MEMHUB_EMBED_MODEL_PATH must point at the model directory", file=sys.stderr)
        return 2
    report = asyncio.run(bench(args))
    out = write_result(args.out or default_out("tenants"), report)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
