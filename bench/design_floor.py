#!/usr/bin/env python3
"""What a `memory_search` call costs on this machine before memhub does anything: the floor
that the fixed design (fastmcp stateless Streamable HTTP under uvicorn, the query embedded by
all-MiniLM-L6-v2, a real MCP client on the same cores) sets under every figure of
bench/search.py.

    .venv/bin/python -m bench.design_floor [--calls 300]
                                         [--memhub URL --namespaces bench-floor,bench]

Two stand-in servers run as their own processes, each a bare fastmcp app offering one tool
named `memory_search` that answers ten canned memories of memhub's shape and size (~8 KB of
JSON, sent as text and as structured content, as memhub's is), with no database:
- `mcp`: the answer alone (HTTP, the MCP layers, the token-less request, the response);
- `mcp+embedding`: the query embedded first by the server's query model (the same recipe,
  threads and loading as memhub's `embedding.embedder`, in a thread, as memhub does).
With `--memhub`, a running memhub's namespaces are measured in the same rotation (batches of
20 distinct queries per target, the targets' order alternating), so every figure comes from
the same minutes. Reported per target: p50 / p95 of the client's wall time, and the CPU that
the server process and the client spent per call. Needs MEMHUB_EMBED_MODEL_PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import (
    TOKEN,
    default_out,
    free_port,
    machine,
    mcp_client,
    percentile,
    provenance,
    wait_healthy,
    write_result,
)
from bench.search import queries, synthetic

ROOT = Path(__file__).resolve().parents[1]

BATCH = 20


def canned_answer() -> dict:
    """Ten results shaped as memory_search returns them (storage/memory_dicts.py), with the
    benchmark corpus's texts, so the answer weighs what memhub's does."""
    rng = random.Random(11)
    results = []
    for i in range(10):
        item = synthetic(50_000 + i, rng)
        results.append({
            "memory": {
                "id": f"00000000-0000-4000-8000-{i:012d}", "namespace": "bench",
                "kind": item["kind"],
                "title": f"<<<UNTRUSTED_DATA>>>{item['title']}<<<END_UNTRUSTED_DATA>>>",
                "content": f"<<<UNTRUSTED_DATA>>>{item['content']}<<<END_UNTRUSTED_DATA>>>",
                "tags": item["tags"], "key": None, "status": "ACTIVE", "revision": 1,
                "author_client": "bench", "created_at": "2026-12-02T10:32:27.109034+00:00",
                "updated_at": "2026-12-02T10:32:27.109034+00:00", "superseded_by": None,
                "expires_at": None, "metadata": None, "quarantined": False,
                "deleted_reason": None,
            },
            "score": round(1 / (61 + i) + 1 / (62 + i), 6),
            "why": {"lexical_rank": i + 1, "semantic_rank": i + 2, "distance": 0.3 + i / 100},
        })
    return {"results": results, "mode": "hybrid", "degraded": False}


def serve(port: int, embed: bool) -> None:
    """The stand-in server (run as `--serve PORT [--embed]` in its own process)."""
    import uvicorn
    from fastmcp import FastMCP
    from starlette.responses import PlainTextResponse

    from memhub.config import Settings
    from memhub.embedding.loading import load_model

    model = load_model(Settings(), for_queries=True) if embed else None
    if model is not None:
        next(iter(model.query_embed(["warm up"])))
    answer = canned_answer()
    mcp = FastMCP("design-floor")

    @mcp.tool
    async def memory_search(namespace: str, query: str, limit: int = 10,
                            mode: str = "hybrid") -> dict:
        """Ten canned memories (after embedding the query, in the `--embed` server)."""
        if model is not None:
            await asyncio.to_thread(lambda: next(iter(model.query_embed([query]))))
        return answer

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request):
        return PlainTextResponse("ok")

    app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, from /proc (Linux), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_stand_in(embed: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    args = [sys.executable, str(Path(__file__).resolve()), "--serve", str(port)]
    server = subprocess.Popen(args + (["--embed"] if embed else []), cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base, "the stand-in server")
    except BaseException:
        server.kill()
        raise
    return server, base


async def measure(targets: list[dict], calls: int) -> dict:
    """Rotate batches of distinct queries across `targets` ({name, base, namespace, pid}); a
    fresh seed each run, so memhub's query-embedding cache never answers."""
    texts = queries(calls + 10, seed=time.time_ns() % 1_000_003)
    walls: dict[str, list[float]] = {t["name"]: [] for t in targets}
    cpu: dict[str, list[float]] = {t["name"]: [0.0, 0.0] for t in targets}
    clients = []
    try:
        for target in targets:
            context = mcp_client(target["base"], token=target.get("token", TOKEN))
            client = await context.__aenter__()
            clients.append(context)
            for text in texts[calls:]:  # warm: the client's schema cache, the pools
                await client.call_tool("memory_search", {"namespace": target["namespace"],
                                                         "query": f"{text} warm up"})
            target["client"] = client
        me = os.getpid()
        for round_no, start in enumerate(range(0, calls, BATCH)):
            order = targets if round_no % 2 == 0 else targets[::-1]
            for target in order:
                before = (_cpu_seconds(target["pid"]) if target["pid"] else 0.0,
                          _cpu_seconds(me))
                for text in texts[start:start + BATCH]:
                    started = time.perf_counter()
                    await target["client"].call_tool(
                        "memory_search", {"namespace": target["namespace"], "query": text})
                    walls[target["name"]].append((time.perf_counter() - started) * 1000)
                after = (_cpu_seconds(target["pid"]) if target["pid"] else 0.0,
                         _cpu_seconds(me))
                cpu[target["name"]][0] += after[0] - before[0]
                cpu[target["name"]][1] += after[1] - before[1]
    finally:
        for context in reversed(clients):
            await context.__aexit__(None, None, None)
    out = {}
    for target in targets:
        values = walls[target["name"]]
        server_cpu, client_cpu = cpu[target["name"]]
        out[target["name"]] = {
            "calls": len(values),
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(percentile(values, 95), 2),
            "server_cpu_ms_per_call": (round(server_cpu * 1000 / len(values), 2)
                                       if target["pid"] else None),
            "client_cpu_ms_per_call": round(client_cpu * 1000 / len(values), 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per target")
    parser.add_argument("--memhub", help="a running memhub's base URL, measured alongside")
    parser.add_argument("--namespaces", default="bench-floor,bench",
                        help="memhub namespaces to search (with --memhub)")
    parser.add_argument("--memhub-pid", type=int, help="memhub's process id (its CPU)")
    parser.add_argument("--token", default=TOKEN, help="memhub's token (with --memhub)")
    parser.add_argument("--out", help="report file (default: "
                        "bench/results/design-floor-DATE-COMMIT.json)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--embed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.embed)
        return
    if not os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        raise SystemExit("set MEMHUB_EMBED_MODEL_PATH to the model directory")
    servers = []
    try:
        targets = []
        for name, embed in (("mcp", False), ("mcp+embedding", True)):
            server, base = _start_stand_in(embed)
            servers.append(server)
            targets.append({"name": name, "base": base, "namespace": "bench",
                            "pid": server.pid})
        if args.memhub:
            for namespace in args.namespaces.split(","):
                targets.append({"name": f"memhub:{namespace}", "base": args.memhub,
                                "namespace": namespace, "pid": args.memhub_pid,
                                "token": args.token})
        print(f"{len(targets)} targets x {args.calls} calls, batches of {BATCH} rotating...",
              flush=True)
        report = {"machine": machine(), **provenance(),
                  "results": asyncio.run(measure(targets, args.calls))}
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    print("| target | p50 | p95 | server CPU / call | client CPU / call |")
    print("| --- | --- | --- | --- | --- |")
    for name, row in report["results"].items():
        server_cpu = row["server_cpu_ms_per_call"]
        print(f"| {name} | {row['p50_ms']} ms | {row['p95_ms']} ms | "
              f"{'-' if server_cpu is None else f'{server_cpu} ms'} | "
              f"{row['client_cpu_ms_per_call']} ms |")
    print(f"written to {write_result(args.out or default_out('design-floor'), report)}")


if __name__ == "__main__":
    main()
