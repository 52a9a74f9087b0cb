#!/usr/bin/env python3
"""Every memhub backend terminated every few seconds: what share of calls still succeeds.

    .venv/bin/python -m bench.backend_terminations [--seconds 30] [--interval 2] [--clients 1]
                                                 [--pool-min 10] [--pool-max 10] [--out FILE]

One fresh memhub (its own process on embedded PostgreSQL, as bench/load.py starts it) whose
pool has grown to its full size (by default pool_min_size = pool_max_size = 10, as after a busy
hour: after each termination every idle connection is dead at once). MCP clients call tools
back to back for `--seconds` in this mix: memory_search (hybrid) 35%, memory_get 15%,
memory_list 15%, memory_remember with a client_request_id 35%; meanwhile a superuser
connection runs `pg_terminate_backend` on every client backend of memhub's database every
`--interval` seconds (the pooled connections, the embedding listener and worker's), and
`/healthz` is polled every 0.1 s.

Reported: calls and the share that succeeded (per tool too), p50 / p95 / p99 latency of all
calls during the fault, errors by code, the longest time `/healthz` went without a 200, and
the check that every acknowledged keyed write exists exactly once (and no attempted write
twice); the run fails (exit 1) if that check does. Written to
bench/results/backend-terminations-<date>-<commit>.json unless --out says otherwise.
tests/concurrency/test_backend_terminations.py runs the same driver against a server in the
test process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
import time
from collections import Counter, defaultdict
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

KILL_ALL = (
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    " AND backend_type = 'client backend'"
)
MIX = (("search", 35), ("get", 15), ("list", 15), ("remember", 35))
CALL_TIMEOUT = 30.0
HEALTH_EVERY = 0.1


@dataclass
class Outcome:
    calls: list[tuple[str, bool, float, str | None]] = field(default_factory=list)
    acked: dict[str, str] = field(default_factory=dict)     # content -> memory id
    attempted: set[str] = field(default_factory=set)        # contents sent
    health: list[tuple[float, bool]] = field(default_factory=list)  # (answered at, 200?)
    kill_rounds: int = 0
    killed: int = 0
    started: float = 0.0
    stopped: float = 0.0


def _code(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        try:
            return json.loads(str(exc))["code"]
        except (json.JSONDecodeError, KeyError, TypeError):
            return "TOOL_ERROR"
    if isinstance(exc, TimeoutError):
        return "CLIENT_TIMEOUT"
    return type(exc).__name__  # e.g. McpError: an HTTP 503 from the token gate


def _client(base_url: str, token: str) -> Client:
    transport = StreamableHttpTransport(f"{base_url}/mcp",
                                        headers={"Authorization": f"Bearer {token}"})
    return Client(transport, timeout=CALL_TIMEOUT)


async def seed(base_url: str, token: str, namespace: str, count: int = 20) -> list[str]:
    """`count` memories to read back during the fault; their ids."""
    ids = []
    async with _client(base_url, token) as client:
        for i in range(count):
            out = await client.call_tool("memory_remember", {
                "namespace": namespace, "kind": "FACT", "title": f"seed {i}",
                "content": f"Seed fact {i}: the deploy pipeline step {i} uses cache {i * 7}.",
                "client_request_id": f"seed-{i}"})
            ids.append(out.structured_content["memory"]["id"])
    return ids


async def _worker(client: Client, n: int, namespace: str, ids: list[str], out: Outcome,
                  until: float) -> None:
    rng = random.Random(n)
    ops, weights = zip(*MIX, strict=True)
    i = 0
    while time.monotonic() < until:
        op = rng.choices(ops, weights)[0]
        if op == "search":
            args = {"namespace": namespace, "query": f"deploy pipeline cache {rng.randrange(20)}",
                    "mode": "hybrid"}
            tool = "memory_search"
        elif op == "get":
            args, tool = {"namespace": namespace, "id": rng.choice(ids)}, "memory_get"
        elif op == "list":
            args, tool = {"namespace": namespace, "limit": 10}, "memory_list"
        else:
            i += 1
            content = f"client {n} note {i}: terminated backends must not lose this write."
            out.attempted.add(content)
            args = {"namespace": namespace, "content": content,
                    "client_request_id": f"c{n}-{i}"}
            tool = "memory_remember"
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(client.call_tool(tool, args), CALL_TIMEOUT)
        except Exception as exc:  # every failure is a data point, whatever its kind
            out.calls.append((op, False, time.monotonic() - started, _code(exc)))
            continue
        out.calls.append((op, True, time.monotonic() - started, None))
        if op == "remember":
            out.acked[args["content"]] = result.structured_content["memory"]["id"]


def _kill_loop(dsn: str, interval: float, stop: threading.Event, out: Outcome) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.wait(interval):
            out.killed += conn.execute(KILL_ALL).fetchone()[0]
            out.kill_rounds += 1


def _health_loop(base_url: str, stop: threading.Event, out: Outcome) -> None:
    with httpx.Client(timeout=10.0) as http:
        while not stop.is_set():
            try:
                ok = http.get(f"{base_url}/healthz").status_code == 200
            except httpx.HTTPError:
                ok = False
            out.health.append((time.monotonic(), ok))
            stop.wait(HEALTH_EVERY)


async def run_fault(base_url: str, token: str, dsn: str, *, namespace: str, seconds: float,
                    interval: float, clients: int, ids: list[str]) -> Outcome:
    """Drive `clients` MCP clients for `seconds` while every backend of `dsn`'s database is
    terminated every `interval` seconds and /healthz is polled."""
    out = Outcome()
    stop = threading.Event()
    async with _open_clients(base_url, token, clients) as sessions:
        threads = [threading.Thread(target=_kill_loop, args=(dsn, interval, stop, out),
                                    daemon=True),
                   threading.Thread(target=_health_loop, args=(base_url, stop, out),
                                    daemon=True)]
        out.started = time.monotonic()
        for thread in threads:
            thread.start()
        try:
            until = out.started + seconds
            await asyncio.wait_for(asyncio.gather(*(
                _worker(c, n, namespace, ids, out, until) for n, c in enumerate(sessions))),
                seconds + 2 * CALL_TIMEOUT)
        finally:
            stop.set()
            out.stopped = time.monotonic()
            for thread in threads:
                thread.join(timeout=15)
    return out


@asynccontextmanager
async def _open_clients(base_url: str, token: str, n: int):
    """`n` MCP sessions, initialized before the fault starts."""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(_client(base_url, token)) for _ in range(n)]


def longest_health_gap(out: Outcome) -> float:
    """The longest time /healthz went without answering 200 during the fault (the fault's
    start and end count as answers: a server that never answered is down the whole run)."""
    oks = [out.started] + [t for t, ok in out.health if ok] + [out.stopped]
    return max(b - a for a, b in zip(oks, oks[1:], strict=False))


def duplicates(dsn: str, namespace: str, out: Outcome) -> dict[str, list[str]]:
    """Acknowledged writes that are missing or not where the answer said, and attempted writes
    stored more than once."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT content, array_agg(id::text) FROM memories"
            " WHERE namespace = %s AND content = ANY(%s) GROUP BY content",
            [namespace, list(out.attempted)]).fetchall()
    stored = {content: ids for content, ids in rows}
    bad = {c: stored.get(c, []) for c, mid in out.acked.items() if stored.get(c) != [mid]}
    bad.update({c: ids for c, ids in stored.items() if len(ids) > 1})
    return bad


def report(out: Outcome, dsn: str, namespace: str) -> dict:
    latencies = sorted(d * 1000 for _, _, d, _ in out.calls)
    by_op: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for op, ok, _, _ in out.calls:
        by_op[op][0] += ok
        by_op[op][1] += 1
    ok = sum(n for n, _ in by_op.values())

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, round(p / 100 * (len(latencies) - 1)))],
                     1) if latencies else float("nan")

    return {
        "calls": len(out.calls), "succeeded": ok,
        "success_rate": round(ok / len(out.calls), 4) if out.calls else 0.0,
        "by_tool": {op: f"{a}/{n}" for op, (a, n) in sorted(by_op.items())},
        "latency_ms": {"p50": pct(50), "p95": pct(95), "p99": pct(99), "max": pct(100)},
        "errors": dict(Counter(code for _, good, _, code in out.calls if not good)),
        "kill_rounds": out.kill_rounds, "backends_killed": out.killed,
        "healthz_polls": len(out.health),
        "healthz_failed": sum(not good for _, good in out.health),
        "healthz_longest_outage_s": round(longest_health_gap(out), 2),
        "acked_writes": len(out.acked),
        "writes_missing_or_duplicated": len(duplicates(dsn, namespace, out)),
    }


async def _main(args: argparse.Namespace) -> dict:
    from bench.common import TOKEN, local_memhub, machine, provenance

    overrides = {"pool_min_size": args.pool_min, "pool_max_size": args.pool_max}
    with local_memhub(**overrides) as (base, _settings, dsn):
        ids = await seed(base, TOKEN, "fault")
        out = await run_fault(base, TOKEN, dsn, namespace="fault", seconds=args.seconds,
                              interval=args.interval, clients=args.clients, ids=ids)
        result = report(out, dsn, "fault")
    return {**provenance(), "machine": machine(), "seconds": args.seconds,
            "interval_s": args.interval, "clients": args.clients, "pool_min": args.pool_min,
            "pool_max": args.pool_max, **result}


def main() -> int:
    from bench.common import default_out, write_result

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--pool-min", type=int, default=10)
    parser.add_argument("--pool-max", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(_main(args))
    print(json.dumps(result, indent=2))
    print(f"written to {write_result(args.out or default_out('backend-terminations'), result)}")
    return 0 if result["writes_missing_or_duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
