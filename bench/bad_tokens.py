#!/usr/bin/env python3
"""A good client's latency while another client floods memhub with bad tokens.

    .venv/bin/python -m bench.bad_tokens [--rate 125 | --concurrency 16] [--seconds 15]
                                       [--calls 300] [--log-level INFO]

One fresh memhub (its own process on embedded PostgreSQL, bench/common.py), its embedding
model loaded. A good client (a real fastmcp Client, its token valid) calls `artifact_list` in
a loop and times each call: first alone, then while a separate process posts to /mcp with
random well-formed `mh_` tokens (a new connection each) from the same loopback address, at
`--rate` requests per second or from `--concurrency` workers as fast as they are answered.
Reported: the good client's p50 / p95 / p99 in each phase, and how the flood was answered
(status counts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import subprocess
import sys
import time
from collections import Counter

import httpx

from bench.common import local_memhub, machine, mcp_client, summary_ms

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


async def good_client(base: str, calls: int) -> list[float]:
    timings = []
    async with mcp_client(base) as client:
        await client.call_tool("artifact_list", {"namespace": "bench"})
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("artifact_list", {"namespace": "bench"})
            timings.append((time.perf_counter() - started) * 1000)
    return timings


async def flood(base: str, rate: float, seconds: float,
                concurrency: int = 0) -> dict[str, object]:
    """Post with a fresh random token every 1/rate s (not waiting for answers), for seconds;
    or, with `concurrency`, from that many workers each as fast as it is answered."""
    statuses: Counter = Counter()
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        async def one() -> None:
            token = "mh_" + secrets.token_urlsafe(32)
            try:
                answer = await http.post(f"{base}/mcp", content=BODY,
                                         headers={**HEADERS, "authorization": f"Bearer {token}",
                                                  "connection": "close"})
                statuses[str(answer.status_code)] += 1
            except httpx.HTTPError as exc:
                statuses[type(exc).__name__] += 1

        print("flooding", flush=True)
        started = time.monotonic()
        sent = 0
        if concurrency:
            # Closed loop: each worker sends its next request as soon as the last is answered.
            async def worker() -> None:
                nonlocal sent
                while time.monotonic() - started < seconds:
                    sent += 1
                    await one()

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        else:
            tasks = []
            while time.monotonic() - started < seconds:
                tasks.append(asyncio.create_task(one()))
                sent += 1
                await asyncio.sleep(max(0.0, started + sent / rate - time.monotonic()))
            await asyncio.gather(*tasks)
    return {"sent": sent, "rate": round(sent / seconds, 1), "statuses": dict(statuses)}


async def model_loaded(base: str, timeout: float = 300.0) -> None:
    """Wait until the embedding model has loaded: its load takes a core for a while."""
    deadline = time.monotonic() + timeout
    async with mcp_client(base) as client:
        while time.monotonic() < deadline:
            stats = (await client.call_tool("stats", {})).structured_content
            if stats["embedding_model"]["state"] != "loading":
                return
            await asyncio.sleep(0.5)
    raise TimeoutError("the embedding model did not load")


async def measure(base: str, rate: float, seconds: float, calls: int,
                  concurrency: int) -> dict[str, object]:
    await model_loaded(base)
    quiet = await good_client(base, calls)
    flooder = subprocess.Popen(
        [sys.executable, "-m", "bench.bad_tokens", "--flood", base, "--rate", str(rate),
         "--seconds", str(seconds), "--concurrency", str(concurrency)],
        stdout=subprocess.PIPE, text=True)
    assert flooder.stdout is not None
    await asyncio.to_thread(flooder.stdout.readline)  # "flooding"
    await asyncio.sleep(1.0)  # let the flood reach its rate
    flooded = await good_client(base, calls)
    out, _ = flooder.communicate(timeout=seconds + 120)
    if flooder.returncode != 0 or not out.strip():
        raise RuntimeError("the flood ended before the good client did; raise --seconds")
    return {"alone_ms": summary_ms(quiet), "flooded_ms": summary_ms(flooded),
            "flood": json.loads(out)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=125.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--log-level", default="INFO", help="the server's (default: INFO)")
    parser.add_argument("--concurrency", type=int, default=0,
                        help="flood from this many workers, each as fast as it is answered "
                             "(instead of at --rate)")
    parser.add_argument("--flood", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        print(json.dumps(asyncio.run(flood(args.flood, args.rate, args.seconds, args.concurrency))))
        return
    with local_memhub(log_level=args.log_level) as (base, _settings, _dsn):
        result = asyncio.run(measure(base, args.rate, args.seconds, args.calls,
                                     args.concurrency))
    result["machine"] = machine()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
