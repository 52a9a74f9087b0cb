#!/usr/bin/env python3
"""The cost of the process, of a write and of a search, on a project's repetitive vocabulary.

    .venv/bin/python -m bench.cost [--writes 10000] [--searches 1000] [--grow 100000]
                                 [--set NAME=VALUE ...] [--out FILE]

One fresh memhub (its own process on embedded PostgreSQL, as bench/load.py starts it), the
corpus of bench/project_corpus.py, in namespace `cost`:
1. Writes: `--writes` notes, one `memory_remember` call each, one after another through one MCP
   client over HTTP. Reported: writes per second; the server process's CPU per write (from
   /proc: user + system, the embedding worker's included, up to the queue being drained); the
   embedding queue's backlog, sampled every 100 ms from PostgreSQL (pending jobs and the age
   of the oldest: a write is semantically searchable once its job is gone, so the oldest age
   bounds the delay); and, every PROBE_EVERY writes, the seconds from the write's
   acknowledgement until a semantic search returns it, measured by a second client while the
   writes go on.
2. Searches: `--searches` calls, a third each in mode hybrid, semantic and lexical, interleaved
   (so a slow minute of a shared machine hits the three alike), each query distinct (the query
   cache never answers), half short keyword lookups, half questions: p50/p95 per mode and kind,
   and hybrid p50 / semantic p50.
3. The lexical and semantic legs' SQL time (EXPLAIN ANALYZE of the server's statements, as
   bench/search.py measures it) at 1,000 memories (during the writes, off the clock), after the
   writes, and after growing the namespace to `--grow` by bulk COPY and the server's own
   embedding worker; at that size the searches of step 2 are measured again.
Throughout: the server's resident set (VmRSS, and VmHWM: its peak), sampled every 100 ms, and
PostgreSQL's proportional set size (the sum of Pss over the cluster's processes, from
/proc/<pid>/smaps_rollup): PSS, since its processes share their buffers. The peak through
steps 1-2 is reported apart from the peak of step 3 (a bulk backlog embeds in full batches).
Needs MEMHUB_EMBED_MODEL_PATH. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
import psycopg

from bench import project_corpus
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

NAMESPACE = "cost"
PROBE_EVERY = 500
SAMPLE_SECONDS = 0.1
SQL_QUERIES = 50


# --- the processes ------------------------------------------------------------------------
def server_process() -> psutil.Process:
    for child in psutil.Process().children(recursive=True):
        try:
            if "memhub.app" in " ".join(child.cmdline()):
                return child
        except psutil.Error:
            continue
    raise RuntimeError("the memhub process was not found")


def postgres_processes(data_dir: Path) -> list[psutil.Process]:
    """The postmaster of the cluster under `data_dir` and its children."""
    postmaster = psutil.Process(int((data_dir / "pgdata" / "postmaster.pid")
                                    .read_text().split()[0]))
    return [postmaster, *postmaster.children(recursive=True)]


def status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pss_mib(processes: list[psutil.Process]) -> float:
    total = 0
    for proc in processes:
        try:
            for line in Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue  # a backend that exited between the listing and the read
    return total / 1024


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def rss_breakdown(pid: int) -> dict[str, float]:
    """Resident MiB by kind of mapping: anonymous (heaps, arenas, tensors), shared libraries,
    other files."""
    out = {"anonymous": 0.0, "libraries": 0.0, "files": 0.0}
    kind = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            path = head[5] if len(head) > 5 else ""
            kind = ("libraries" if ".so" in path else
                    "files" if path.startswith("/") else "anonymous")
        elif head and head[0] == "Rss:":
            out[kind] += int(head[1]) / 1024
    return {k: round(v, 1) for k, v in out.items()}


class Sampler(threading.Thread):
    """Every SAMPLE_SECONDS: the server's RSS, the cluster's PSS, the embedding backlog."""

    def __init__(self, server: psutil.Process, data_dir: Path, dsn: str) -> None:
        super().__init__(daemon=True)
        self.server, self.data_dir, self.dsn = server, data_dir, dsn
        self.stop = threading.Event()
        self.phase = "idle"
        self.peak: dict[str, dict[str, float]] = {}
        self.backlog: list[tuple[int, float]] = []  # while phase == "writes"

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.wait(SAMPLE_SECONDS):
                peak = self.peak.setdefault(self.phase, {"rss_mib": 0.0, "postgres_pss_mib": 0.0})
                peak["rss_mib"] = max(peak["rss_mib"], status_mib(self.server.pid, "VmRSS"))
                peak["postgres_pss_mib"] = max(peak["postgres_pss_mib"],
                                               pss_mib(postgres_processes(self.data_dir)))
                if self.phase == "writes":
                    pending, age = conn.execute(
                        "SELECT count(*), coalesce(extract(epoch FROM clock_timestamp()"
                        " - min(created_at)), 0) FROM embedding_jobs"
                        " WHERE status = 'pending'").fetchone()
                    self.backlog.append((pending, float(age)))


# --- writes ---------------------------------------------------------------------------------
async def probe(base: str, text: str, memory_id: str, acked: float, out: list[float]) -> None:
    """Seconds from `acked` until a semantic search returns `memory_id`."""
    async with mcp_client(base) as client:
        while time.perf_counter() - acked < 30:
            found = await client.call_tool("memory_search", {
                "namespace": NAMESPACE, "query": text, "mode": "semantic", "limit": 5})
            if any(r["memory"]["id"] == memory_id
                   for r in found.structured_content["results"]):
                out.append(time.perf_counter() - acked)
                return
            await asyncio.sleep(0.02)
    out.append(float("inf"))


async def write_phase(base: str, settings, dsn: str, server: psutil.Process,
                      sampler: Sampler, count: int, seen: set[str]) -> dict:
    notes = list(project_corpus.notes(0, count, random.Random(1), seen))
    delays: list[float] = []
    probes: list[asyncio.Task] = []
    sql_at_1k = None
    paused = 0.0
    sampler.phase = "writes"
    cpu_before = cpu_seconds(server)
    started = time.perf_counter()
    async with mcp_client(base) as client:
        for i, item in enumerate(notes):
            answer = await client.call_tool("memory_remember", {"namespace": NAMESPACE, **item})
            if i % PROBE_EVERY == PROBE_EVERY - 1:
                probes.append(asyncio.create_task(probe(
                    base, f"{item['title']}\n{item['content']}",
                    answer.structured_content["memory"]["id"], time.perf_counter(), delays)))
            if i + 1 == 1000 and count > 1000:
                # The lexical leg's SQL time at 1k, off the clock.
                pause = time.perf_counter()
                await wait_embedded(client)
                sql_at_1k = await sql_times(dsn, settings)
                paused += time.perf_counter() - pause
        wall = time.perf_counter() - started - paused
        cpu_acked = cpu_seconds(server) - cpu_before
        await asyncio.gather(*probes)
        await wait_embedded(client)
    cpu_drained = cpu_seconds(server) - cpu_before
    sampler.phase = "searches"
    pending = [p for p, _ in sampler.backlog]
    ages = [a for _, a in sampler.backlog]
    return {
        "count": count,
        "writes_per_s": round(count / wall, 1),
        "client_ms_per_write": round(wall * 1000 / count, 2),
        # CPU of the memhub process per write: until the last acknowledgement, and until the
        # queue was drained (each write's embedding included; the probes' searches and the
        # 1k SQL pause are in both, a few hundred calls against `count`).
        "server_cpu_ms_per_write": round(cpu_drained * 1000 / count, 2),
        "server_cpu_ms_per_write_until_acked": round(cpu_acked * 1000 / count, 2),
        "backlog": {"pending_max": max(pending, default=0),
                    "pending_p50": statistics.median(pending) if pending else 0,
                    "oldest_age_s_max": round(max(ages, default=0.0), 3),
                    "oldest_age_s_p99": round(sorted(ages)[int(0.99 * (len(ages) - 1))], 3)
                    if ages else 0.0,
                    "samples": len(pending)},
        "searchable_after_ack_s": {"probes": len(delays),
                                   "median": round(statistics.median(delays), 3),
                                   "max": round(max(delays), 3)} if delays else None,
    }, sql_at_1k


# --- searches -------------------------------------------------------------------------------
async def search_phase(base: str, count: int, seed: int) -> dict:
    texts = project_corpus.queries(count, seed=seed)
    modes = ("hybrid", "semantic", "lexical")
    latency: dict[str, dict[str, list[float]]] = {m: {"keyword": [], "question": []}
                                                  for m in modes}
    async with mcp_client(base) as client:
        await client.call_tool("memory_search", {"namespace": NAMESPACE, "query": "warm up"})
        for i, (kind, text) in enumerate(texts):
            mode = modes[i % 3]
            started = time.perf_counter()
            await client.call_tool("memory_search", {"namespace": NAMESPACE, "query": text,
                                                     "mode": mode})
            latency[mode][kind].append((time.perf_counter() - started) * 1000)
    out: dict = {}
    for mode, kinds in latency.items():
        every = kinds["keyword"] + kinds["question"]
        out[mode] = {"all": summary_ms(every),
                     **{kind: summary_ms(v) for kind, v in kinds.items()}}
    out["hybrid_over_semantic_p50"] = round(out["hybrid"]["all"]["p50"]
                                            / out["semantic"]["all"]["p50"], 3)
    return out


async def sql_times(dsn: str, settings) -> dict[str, float]:
    from bench.search import sql_times as legs

    texts = [text for _, text in project_corpus.queries(SQL_QUERIES, seed=99)]
    return await legs(dsn, settings, texts, namespace=NAMESPACE)


def bulk_insert(dsn: str, start: int, stop: int, seen: set[str]) -> None:
    """Notes start..stop by COPY, with their revision rows and embedding jobs (as
    bench/search.py grows its corpus); none repeats a content in `seen`."""
    from bench.search import bulk_insert as copy_rows

    made = project_corpus.notes(start, stop, random.Random(start), seen)
    copy_rows(dsn, start, stop, namespace=NAMESPACE, make=lambda _i: next(made))


# --- the run --------------------------------------------------------------------------------
async def bench(args) -> dict:
    overrides = {"embed_model_path": os.environ["MEMHUB_EMBED_MODEL_PATH"]}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name.lower().removeprefix("memhub_")] = value
    report: dict = {"machine": machine(), **provenance(), "settings": overrides,
                    "load_average_before": os.getloadavg()}
    with local_memhub(**overrides) as (base, settings, dsn):
        server = server_process()
        async with mcp_client(base) as client:
            while (await client.call_tool("stats", {})).structured_content[
                    "embedding_model"]["state"] == "loading":
                await asyncio.sleep(0.2)
        sampler = Sampler(server, Path(settings.data_dir), dsn)
        sampler.start()
        report["idle"] = {"rss_mib": round(status_mib(server.pid, "VmRSS"), 1),
                          "rss": rss_breakdown(server.pid),
                          "postgres_pss_mib": round(pss_mib(
                              postgres_processes(Path(settings.data_dir))), 1)}
        print(f"idle: {report['idle']}", flush=True)
        seen: set[str] = set()
        report["writes"], sql_1k = await write_phase(base, settings, dsn, server, sampler,
                                                     args.writes, seen)
        print(f"writes: {report['writes']}", flush=True)
        report["sql_ms"] = {}
        if sql_1k:
            report["sql_ms"][1000] = sql_1k
        report["sql_ms"][args.writes] = await sql_times(dsn, settings)
        report["searches"] = {args.writes: await search_phase(base, args.searches, seed=11)}
        print(f"searches at {args.writes}: {report['searches'][args.writes]}", flush=True)
        report["peak"] = {"rss_mib_through_writes_and_searches": round(
            status_mib(server.pid, "VmHWM"), 1)}
        report["after_searches"] = {"rss_mib": round(status_mib(server.pid, "VmRSS"), 1),
                                    "rss": rss_breakdown(server.pid)}
        if args.grow > args.writes:
            sampler.phase = "grow"
            started = time.perf_counter()
            await asyncio.to_thread(bulk_insert, dsn, args.writes, args.grow, seen)
            async with mcp_client(base) as client:
                await wait_embedded(client)
            report["grow_s"] = round(time.perf_counter() - started)
            sampler.phase = "searches-grown"
            report["sql_ms"][args.grow] = await sql_times(dsn, settings)
            report["searches"][args.grow] = await search_phase(base, args.searches, seed=12)
            print(f"searches at {args.grow}: {report['searches'][args.grow]}", flush=True)
            report["peak"]["rss_mib_overall"] = round(status_mib(server.pid, "VmHWM"), 1)
        sampler.stop.set()
        sampler.join()
        report["peak"]["by_phase"] = {k: {n: round(v, 1) for n, v in p.items()}
                                      for k, p in sampler.peak.items()}
    sizes = sorted(report["sql_ms"])
    report["lexical_sql_growth"] = {
        f"{size}/{sizes[0]}": round(report["sql_ms"][size]["lexical"]
                                    / report["sql_ms"][sizes[0]]["lexical"], 2)
        for size in sizes[1:]}
    report["load_average_after"] = os.getloadavg()
    return report


def headline(report: dict) -> str:
    w = report["writes"]
    lines = [f"peak RSS {report['peak']['rss_mib_through_writes_and_searches']} MiB "
             f"(idle {report['idle']['rss_mib']}); postgres PSS peak "
             f"{max(p['postgres_pss_mib'] for p in report['peak']['by_phase'].values())} MiB",
             f"writes {w['writes_per_s']}/s, server CPU {w['server_cpu_ms_per_write']} ms/write, "
             f"backlog max {w['backlog']['pending_max']} (oldest {w['backlog']['oldest_age_s_max']}"
             f" s), searchable after ack {w['searchable_after_ack_s']}"]
    for size, s in report["searches"].items():
        lines.append(f"{size}: hybrid p50 {s['hybrid']['all']['p50']} ms, semantic "
                     f"{s['semantic']['all']['p50']}, lexical {s['lexical']['all']['p50']}; "
                     f"hybrid/semantic {s['hybrid_over_semantic_p50']}")
    lines.append(f"SQL ms by size: {report['sql_ms']}; lexical growth "
                 f"{report['lexical_sql_growth']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=10000)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--grow", type=int, default=100000,
                        help="grow the namespace to this many notes by COPY (0: do not)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a server setting, e.g. --set query_quantize=none")
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/cost-DATE-COMMIT.json)")
    args = parser.parse_args()
    if not os.environ.get("MEMHUB_EMBED_MODEL_PATH"):
        print("MEMHUB_EMBED_MODEL_PATH must point at the model directory", file=sys.stderr)
        return 2
    report = asyncio.run(bench(args))
    out = write_result(args.out or default_out("cost"), report)
    print(headline(report))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
