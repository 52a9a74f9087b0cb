#!/usr/bin/env python3
"""Many clients at once: throughput, latency and the guarantees under concurrent load.

    .venv/bin/python -m bench.load [--clients 1,10,50,150] [--seconds 20] [--seed 10000]
                                 [--pool-max N] [--out FILE]

One fresh memhub (its own process on embedded PostgreSQL, as bench/search.py starts
it) holding an established project: `--seed` memories of bench/search.py's generator in
namespace `bench`, written in bulk and embedded by the server's worker. Then, per level, a new
project (namespace `load-1`, `load-2`, ...) is worked on by that many MCP clients at once
(each its own fastmcp Client over HTTP, as separate connectors would be), calling tools in a
loop for `--seconds`, in this mix: memory_search 45% (hybrid), memory_context 10%,
memory_remember 15%, memory_remember superseding one of the client's own earlier memories 10%,
memory_revise of one of 20 hot memories that every client revises (compare-and-set, so most
lose) 20%.

Reported per level: calls per second, p50 / p95 / p99 per tool, errors by code. And checked,
so that a load that breaks a guarantee fails the run (exit 1), not only slows it:
- no search or context answer holds a memory whose supersession was acknowledged before the
  call was sent (stage 0 under load);
- every hot memory's final revision is 1 + the number of `revised` answers it got, and its
  content is the last acknowledged revision's (no lost update, no double apply);
- every acknowledged write reads back: ACTIVE with its content, or SUPERSEDED by the memory
  that replaced it (no lost write);
- no call failed, but the revisions of hot memories that lost their compare-and-set (CONFLICT,
  counted as `lost_races`: the mix provokes them on purpose).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

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
from bench.search import bulk_insert, queries, synthetic

ROOT = Path(__file__).resolve().parents[1]

HOT = 20
MIX = (("search", 45), ("context", 10), ("remember", 15), ("supersede", 10), ("revise", 20))


class Ledger:
    """What the clients were told, to check the server's state against afterwards."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.superseded_at: dict[str, float] = {}   # id -> when its supersession was acked
        self.written: dict[str, str] = {}           # id -> content acknowledged
        self.replaced_by: dict[str, str] = {}       # superseded id -> its replacement
        self.hot: dict[str, dict] = {}              # id -> {"revision", "revised", "acked"}
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter = Counter()
        self.error_samples: dict[str, str] = {}
        self.leaks: list[dict] = []
        self.lost_races = 0


def _error_code(result) -> str:
    try:
        return json.loads(result.content[0].text).get("code", "UNKNOWN")
    except (ValueError, IndexError, AttributeError):
        return "UNPARSEABLE"


async def _call(client, ledger: Ledger, op: str, tool: str, args: dict):
    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, args, raise_on_error=False)
    except Exception as exc:  # a transport failure under load is what this run looks for
        ledger.errors[f"{op}:{type(exc).__name__}"] += 1
        return None
    finally:
        ledger.latency[op].append((time.perf_counter() - started) * 1000)
    if result.is_error:
        code = _error_code(result)
        if op == "revise" and code == "CONFLICT":
            # Every client revises the same hot memories: most lose, by design.
            ledger.lost_races += 1
            return {"conflict": json.loads(result.content[0].text).get("details", {})}
        ledger.errors[f"{op}:{code}"] += 1
        ledger.error_samples.setdefault(f"{op}:{code}", result.content[0].text[:500])
        return None
    return result.structured_content


def _check_leaks(ledger: Ledger, op: str, sent: float, ids: list[str]) -> None:
    for memory_id in ids:
        retired = ledger.superseded_at.get(memory_id)
        if retired is not None and retired < sent:
            ledger.leaks.append({"op": op, "id": memory_id, "retired_ms_before_call":
                                 round((sent - retired) * 1000, 1)})


async def client_loop(base: str, ledger: Ledger, run: str, worker: int, until: float,
                      qs: list[str]) -> None:
    rng = random.Random(worker)
    ops = [op for op, weight in MIX for _ in range(weight)]
    mine: list[str] = []
    n = 0
    async with mcp_client(base) as client:
        while time.monotonic() < until:
            n += 1
            op = rng.choice(ops)
            if op == "supersede" and not mine:
                op = "remember"
            if op in ("search", "context"):
                sent = time.monotonic()
                query = rng.choice(qs)
                if op == "search":
                    answer = await _call(client, ledger, op, "memory_search",
                                         {"namespace": ledger.namespace, "query": query})
                    ids = [r["memory"]["id"] for r in (answer or {}).get("results", [])]
                else:
                    answer = await _call(client, ledger, op, "memory_context",
                                         {"namespace": ledger.namespace, "query": query,
                                          "budget_tokens": 800})
                    ids = [m["id"] for m in (answer or {}).get("memories", [])]
                _check_leaks(ledger, op, sent, ids)
            elif op in ("remember", "supersede"):
                item = synthetic(10**6 + worker * 10**5 + n, rng)
                item["content"] += f" Load run {run}, writer {worker}, call {n}."
                args = {"namespace": ledger.namespace, **item}
                old = None
                if op == "supersede":
                    old = mine.pop(rng.randrange(len(mine)))
                    args["supersedes"] = [old]
                answer = await _call(client, ledger, op, "memory_remember", args)
                if answer is None:
                    if old is not None:
                        mine.append(old)
                    continue
                new_id = answer["memory"]["id"]
                ledger.written[new_id] = item["content"]
                mine.append(new_id)
                if old is not None:
                    ledger.superseded_at[old] = time.monotonic()
                    ledger.replaced_by[old] = new_id
            else:
                hot_id = rng.choice(list(ledger.hot))
                state = ledger.hot[hot_id]
                content = f"Hot memory revised in run {run} by writer {worker} at call {n}."
                answer = await _call(client, ledger, op, "memory_revise",
                                     {"namespace": ledger.namespace, "id": hot_id,
                                      "expected_revision": state["revision"],
                                      "content": content})
                if answer and answer.get("outcome") == "revised":
                    revision = answer["memory"]["revision"]
                    state["revised"] += 1
                    state["acked"][revision] = content
                    state["revision"] = max(state["revision"], revision)
                elif answer and "conflict" in answer:
                    # The winner's revision; its text arrives with the winner's own answer,
                    # which may come after this one.
                    current = answer["conflict"].get("current_revision")
                    if isinstance(current, int):
                        state["revision"] = max(state["revision"], current)


async def verify(base: str, ledger: Ledger) -> list[str]:
    problems: list[str] = []
    async with mcp_client(base) as client:
        for hot_id, state in ledger.hot.items():
            memory = (await client.call_tool("memory_get", {"namespace": ledger.namespace,
                                                            "id": hot_id})).structured_content
            memory = memory["memory"]
            if memory["revision"] != 1 + state["revised"]:
                problems.append(f"hot {hot_id}: revision {memory['revision']} after "
                                f"{state['revised']} acknowledged revisions")
            elif state["revised"] and state["acked"].get(memory["revision"], "\0") \
                    not in memory["content"]:
                problems.append(f"hot {hot_id}: content is not the last acknowledged revision's")
        for memory_id, content in ledger.written.items():
            memory = (await client.call_tool("memory_get", {"namespace": ledger.namespace,
                                                            "id": memory_id})).structured_content
            memory = memory["memory"]
            replaced = ledger.replaced_by.get(memory_id)
            if replaced is not None:
                if memory["status"] != "SUPERSEDED" or memory["superseded_by"] != replaced:
                    problems.append(f"{memory_id}: {memory['status']}, superseded_by "
                                    f"{memory['superseded_by']}, expected {replaced}")
            elif memory["status"] != "ACTIVE" or content not in memory["content"]:
                problems.append(f"{memory_id}: {memory['status']} or its content was lost")
    return problems


async def seed(base: str, dsn: str, count: int) -> None:
    """`count` memories of bench/search.py's generator in its namespace (bulk, then embedded by
    the server's own worker), so the levels' new namespaces share the tables with an
    established project, as on a server that already holds one."""
    if count:
        bulk_insert(dsn, 0, count)
    async with mcp_client(base) as client:
        await wait_embedded(client)


def _machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (every process), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


async def run_level(base: str, index: int, clients: int, seconds: float) -> dict:
    ledger = Ledger(f"load-{index + 1}")
    await seed_hot_only(base, ledger)
    qs = queries(500, seed=clients)
    busy_before, client_before = _machine_busy(), time.process_time()
    started = time.monotonic()
    until = started + seconds
    run = f"{index}.{clients}"
    await asyncio.gather(*(client_loop(base, ledger, run, w, until, qs) for w in range(clients)))
    wall = time.monotonic() - started
    busy, client_cpu = _machine_busy() - busy_before, time.process_time() - client_before
    problems = await verify(base, ledger)
    calls = sum(len(v) for v in ledger.latency.values())
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "calls": calls,
        "calls_per_s": round(calls / wall, 1),
        # The clients run in this one process, on the same two cores as the server and
        # PostgreSQL: their share of the machine is part of what limits the rate.
        "cpu_ms_per_call": {"machine": round(busy * 1000 / calls, 2),
                            "clients": round(client_cpu * 1000 / calls, 2)},
        "latency_ms": {op: {"calls": len(v), **summary_ms(v)}
                       for op, v in sorted(ledger.latency.items())},
        "errors": dict(ledger.errors),
        "error_samples": ledger.error_samples,
        "stale_leaks": ledger.leaks[:20],
        "stale_leak_count": len(ledger.leaks),
        "hot_revisions": sum(s["revised"] for s in ledger.hot.values()),
        "lost_races": ledger.lost_races,
        "writes_checked": len(ledger.written),
        "problems": problems[:20],
        "problem_count": len(problems),
    }


async def seed_hot_only(base: str, ledger: Ledger) -> None:
    """Fresh hot memories per level, so each level's revision count starts from 1. Every text
    a level writes names the level, so no write deduplicates against another level's."""
    async with mcp_client(base) as client:
        for i in range(HOT):
            answer = (await client.call_tool("memory_remember", {
                "namespace": ledger.namespace, "kind": "DECISION",
                "title": f"hot decision {i} ({random.random():.6f})",
                "content": f"Hot memory {i} ({random.random():.9f}): every load client "
                           "revises it."})).structured_content
            # revision: the newest known (the next expected); acked: revision -> its text
            ledger.hot[answer["memory"]["id"]] = {"revision": 1, "revised": 0, "acked": {}}


def _print_level(level: dict) -> None:
    lat = level["latency_ms"]
    cells = ", ".join(f"{op} {v['p50']:.0f}/{v['p95']:.0f}" for op, v in lat.items())
    print(f"{level['clients']:>4} clients: {level['calls_per_s']:>6.1f} calls/s "
          f"({level['calls']} calls, CPU/call {level['cpu_ms_per_call']['machine']:.1f} ms, "
          f"clients' {level['cpu_ms_per_call']['clients']:.1f}); p50/p95 ms: {cells}; "
          f"errors {level['errors'] or 0}; "
          f"stale leaks {level['stale_leak_count']}; problems {level['problem_count']}",
          flush=True)
    for key, sample in level["error_samples"].items():
        print(f"     {key}: {sample}", flush=True)


async def main_async(args) -> int:
    levels = [int(x) for x in args.clients.split(",")]
    report = {"machine": machine(), **provenance(), "seed_memories": args.seed,
              "seconds": args.seconds, "mix": dict(MIX), "levels": []}
    overrides = {"embed_model_path": os.environ["MEMHUB_EMBED_MODEL_PATH"]}
    if args.pool_max:
        overrides["pool_max_size"] = args.pool_max
    with local_memhub(**overrides) as (base, _settings, dsn):
        started = time.monotonic()
        await seed(base, dsn, args.seed)
        print(f"seeded {args.seed} memories in {time.monotonic() - started:.0f} s", flush=True)
        for index, clients in enumerate(levels):
            level = await run_level(base, index, clients, args.seconds)
            _print_level(level)
            report["levels"].append(level)
    print(f"written to {write_result(args.out or default_out('load'), report)}")
    failed = [lv["clients"] for lv in report["levels"]
              if lv["errors"] or lv["stale_leak_count"] or lv["problem_count"]]
    if failed:
        print(f"FAILED at {failed} clients: see errors, stale leaks and problems above",
              file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="1,10,50,150")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=10000,
                        help="memories of an established project written first (bulk)")
    parser.add_argument("--pool-max", type=int, default=None,
                        help="MEMHUB_POOL_MAX_SIZE for the server (default: its own)")
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/load-DATE-COMMIT.json)")
    args = parser.parse_args()
    if not os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        print("MEMHUB_EMBED_MODEL_PATH must point at the model directory", file=sys.stderr)
        return 2
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
