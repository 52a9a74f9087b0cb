#!/usr/bin/env python3
"""Many tenants on one memhub: memory in every load pattern, fairness, scale, concurrency.

    .venv/bin/python -m bench.tenants --pattern PATTERN[,PATTERN...] [--set NAME=VALUE ...]

PATTERN is one below or a group: rss (load, load-cold, backlog, import, concurrency: each
reports the server's peak RSS), fairness (import, noisy), flat (scale, many), all. Each
pattern's figures go to bench/results/tenants-<pattern>-<date>-<commit>.json. The defaults
run in a few minutes each; the issue's scales are flags (--backlog 20000 --import-size 50000
--neighbour 100000 --corpus 100000 --many-total 300000; the corpus's vectors take ~15 min to
compute once on two cores, then come from a cache under /tmp).

Each pattern starts a fresh memhub (its own process on embedded PostgreSQL, bench/common.py)
and drives it through real MCP clients over HTTP; the server's peak RSS is the kernel's VmHWM
of its process, read at the end of the pattern. Corpus: bench/project_corpus.py's notes, a
quarter of them long (~250 tokens), each written through MCP with three questions it answers
(three more vectors: migration 0040). Patterns:

- load / load-cold: 2,000 writes from 4 clients starting as soon as /healthz answers, while
  the model loads (load-cold: into an empty MEMHUB_MODEL_CACHE_DIR, so the 8-bit query copy and
  the mapped copies are made too); peak RSS once the queue is drained.
- backlog: `--backlog` memories queued for embedding at once (COPY with their jobs, as a restore or
  a bulk load leaves them), drained by the server's worker; peak RSS.
- import: `memhub-admin import` (admin/import_.py, run by this process as the command would) of
  a `--import-size` export into namespace `import`; while its embeddings are worked off, a second
  namespace writes a memory every 0.5 s and searches for it by meaning until found: the delay
  per write (p50/p95/max), and peak RSS.
- noisy: tenant B (200 memories) searches alone (`--quiet-searches` hybrid searches, each query
  new), then the same count while 12 clients of tenant A flood it with memory_remember and
  memory_search, half each: B's p50/p95 in both phases, their ratio, B's errors.
- scale: a 200-memory tenant's semantic and hybrid top 10 for 100 queries alone, then beside a
  100,000-memory neighbour (bulk-loaded with precomputed vectors: bench/tenant_corpus.py):
  overlap with its results alone and with an exact scan, latency alone and beside; the
  neighbour's own hybrid and semantic p50; pgvector's filtered HNSW scan (ef_search,
  iterative scans, max_scan_tuples) for the small namespace and namespaces of `--sweep-sizes`
  beside it, in SQL.
- many: `--many-total` memories in `--many-namespaces` namespaces of Zipf-like sizes (at
  most `--corpus` each; bulk-loaded with precomputed vectors); search p50/p99 and write rate
  per namespace size.
- concurrency: one client, then `--clients` (32) clients over `--namespaces` (16), each
  mixing memory_remember (keyed, a tenth re-sent with the same client_request_id),
  memory_revise, memory_search and memory_context for `--seconds` (60); errors, pool
  timeouts (UNAVAILABLE), every keyed write checked (exactly one ACTIVE memory per
  acknowledged key, with its content; every replay the same memory), throughput and p50/p99
  per operation; peak RSS.

Needs MEMHUB_EMBED_MODEL_PATH. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from bench import tenant_patterns
from bench.common import RESULTS, machine, provenance, write_result

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


GROUPS = {
    "rss": ["load", "load-cold", "backlog", "import", "concurrency"],
    "fairness": ["import", "noisy"],
    "flat": ["scale", "many"],
    "all": list(PATTERNS),
}


def chosen(spec: str) -> list[str]:
    names: list[str] = []
    for item in spec.split(","):
        for name in GROUPS.get(item, [item]):
            if name not in PATTERNS:
                raise SystemExit(f"unknown pattern {name!r}: {', '.join([*PATTERNS, *GROUPS])}")
            if name not in names:
                names.append(name)
    return names


async def run(args, name: str, overrides: dict) -> dict:
    report: dict = {"pattern": name, "machine": machine(), **provenance(),
                    "settings": overrides, "command": " ".join(sys.argv),
                    "load_average_before": os.getloadavg()}
    started = time.monotonic()
    print(f"== {name}", flush=True)
    report["result"] = await PATTERNS[name](args, overrides)
    report["load_average_after"] = os.getloadavg()
    report["seconds"] = round(time.monotonic() - started)
    print(f"{name}: {tenant_patterns.headline(name, report['result'])}", flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pattern", "--patterns", dest="pattern", default="all",
                        help="patterns or groups, comma-separated")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a server setting, e.g. --set max_active_calls=0")
    parser.add_argument("--load-writes", type=int, default=2000)
    parser.add_argument("--backlog", type=int, default=5000)
    parser.add_argument("--import-size", type=int, default=10_000)
    parser.add_argument("--quiet-searches", type=int, default=150)
    parser.add_argument("--flooders", type=int, default=12)
    parser.add_argument("--neighbour", type=int, default=10_000)
    parser.add_argument("--corpus", type=int, default=10_000,
                        help="distinct notes with precomputed vectors (scale, many)")
    parser.add_argument("--sweep-sizes", default="1000,3000")
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--many-total", type=int, default=30_000)
    parser.add_argument("--many-namespaces", type=int, default=100)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--namespaces", type=int, default=16)
    parser.add_argument("--seed-memories", type=int, default=200,
                        help="memories per namespace before the concurrency run")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--label", default="",
                        help="appended to each file's name (e.g. max-active-calls-0)")
    args = parser.parse_args()
    if not os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        print("MEMHUB_EMBED_MODEL_PATH must point at the model directory", file=sys.stderr)
        return 2
    overrides = {"embed_model_path": os.environ["MEMHUB_EMBED_MODEL_PATH"]}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name.lower().removeprefix("memhub_")] = value
    for name in chosen(args.pattern):
        report = asyncio.run(run(args, name, overrides))
        # Named by the commit the run started at (a commit during a long run changes HEAD).
        out = RESULTS / f"tenants-{name}-{report['date']}-{report['commit']}.json"
        if args.label:
            out = out.with_name(f"{out.stem}-{args.label}.json")
        print(f"written to {write_result(out, report)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
