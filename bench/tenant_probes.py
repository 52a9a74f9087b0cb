"""What bench/tenants.py measures with: the server process's memory, timed calls, tenants'
clients in loops, and the probe that times a write until it is found by meaning."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import psutil

from bench import project_corpus
from bench.common import mcp_client, summary_ms

SAMPLE_SECONDS = 0.1
LONG_TAIL = (" The runbook says to check the dashboards first, then the logs of the service and "
             "of every dependency it calls, then the recent deploys and configuration changes, "
             "and only then to restart anything; a restart hides the evidence the next person "
             "needs.")


def server_process() -> psutil.Process:
    for child in psutil.Process().children(recursive=True):
        try:
            if "memhub.app" in " ".join(child.cmdline()):
                return child
        except psutil.Error:
            continue
    raise RuntimeError("the memhub process was not found")


def status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


class Peak(threading.Thread):
    """The server's VmRSS sampled every SAMPLE_SECONDS (its VmHWM is the kernel's own peak)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.stop, self.rss_max = pid, threading.Event(), 0.0

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            try:
                self.rss_max = max(self.rss_max, status_mib(self.pid, "VmRSS"))
            except OSError:
                return

    def report(self) -> dict[str, float]:
        return {"vm_hwm_mib": status_mib(self.pid, "VmHWM"),
                "rss_now_mib": status_mib(self.pid, "VmRSS"),
                "rss_sampled_max_mib": round(self.rss_max, 1)}


def note(i: int, rng: random.Random, *, long_every: int = 4, questions: bool = True) -> dict:
    """A project note; every `long_every`-th one long (~250 tokens, as long memories are), and
    with questions it answers (each its own vector: migration 0040)."""
    item = project_corpus.note(i, rng)
    item["content"] += f" (note {i}, {rng.random():.9f})"
    if long_every and i % long_every == 0:
        item["content"] += LONG_TAIL * 3
    if questions:
        _, text = project_corpus.queries(3, seed=i)[1]
        item["questions"] = [text, f"what did we note about {item['title']}?",
                             f"where is {item['tags'][0]} handled?"]
    return item


def error_code(result) -> str:
    try:
        return json.loads(result.content[0].text).get("code", "UNKNOWN")
    except (ValueError, IndexError, AttributeError):
        return "UNPARSEABLE"


class Calls:
    """Latencies by operation, errors by code."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter = Counter()
        self.expected: Counter = Counter()  # refusals the mix provokes on purpose
        self.samples: dict[str, str] = {}

    async def call(self, client, op: str, tool: str, args: dict, expect: tuple[str, ...] = ()):
        started = time.perf_counter()
        try:
            result = await client.call_tool(tool, args, raise_on_error=False)
        except Exception as exc:  # a transport failure under load is what this run looks for
            self.errors[f"{op}:{type(exc).__name__}"] += 1
            self.samples.setdefault(f"{op}:{type(exc).__name__}", str(exc)[:300])
            return None
        finally:
            self.latency[op].append((time.perf_counter() - started) * 1000)
        if result.is_error:
            code = error_code(result)
            if code in expect:
                self.expected[f"{op}:{code}"] += 1
                return {"error": code, "text": result.content[0].text}
            self.errors[f"{op}:{code}"] += 1
            self.samples.setdefault(f"{op}:{code}", result.content[0].text[:300])
            return {"error": code, "text": result.content[0].text}
        return result.structured_content

    def summary(self, seconds: float | None = None) -> dict:
        out = {op: {"calls": len(v), **summary_ms(v)} for op, v in sorted(self.latency.items())}
        report: dict = {"latency_ms": out, "errors": dict(self.errors),
                        "expected_refusals": dict(self.expected),
                        "error_samples": self.samples}
        if seconds:
            calls = sum(len(v) for v in self.latency.values())
            report["calls_per_s"] = round(calls / seconds, 1)
            report["per_op_per_s"] = {op: round(len(v) / seconds, 1)
                                      for op, v in sorted(self.latency.items())}
        return report


async def searches(base: str, namespace: str, texts: list[str], mode: str = "hybrid",
                   calls: Calls | None = None, limit: int = 10) -> list[list[str]]:
    """Each text searched once, in order, through one client: the ids returned."""
    calls = calls or Calls()
    out = []
    async with mcp_client(base) as client:
        for text in texts:
            answer = await calls.call(client, mode, "memory_search",
                                      {"namespace": namespace, "query": text, "mode": mode,
                                       "limit": limit})
            out.append([r["id"] for r in (answer or {}).get("results", [])])
    return out


async def write_notes(base: str, namespace: str, items: list[dict], clients: int = 4,
                      calls: Calls | None = None) -> list[str]:
    """`items` written by `clients` concurrent clients; the ids acknowledged."""
    calls = calls or Calls()
    queue = list(enumerate(items))
    ids: list[str] = [""] * len(items)

    async def worker() -> None:
        async with mcp_client(base) as client:
            while queue:
                i, item = queue.pop()
                answer = await calls.call(client, "remember", "memory_remember",
                                          {"namespace": namespace, **item})
                if answer and "memory" in answer:
                    ids[i] = answer["memory"]["id"]

    await asyncio.gather(*(worker() for _ in range(clients)))
    return ids


async def searchable_delays(base: str, namespace: str, until, every: float = 0.5,
                            limit_s: float = 30.0, record=lambda delay: None) -> list[float]:
    """At least once, and while `until()` is false: write a distinct memory to `namespace`,
    then search for it by meaning every 50 ms: the seconds from the write's acknowledgement
    until it is found (each also to `record`, as it is measured)."""
    delays: list[float] = []
    rng = random.Random(5)
    n = 0
    async with mcp_client(base) as client:
        while n == 0 or not until():
            n += 1
            item = note(10**8 + n, rng, long_every=0, questions=False)
            written = await client.call_tool("memory_remember", {"namespace": namespace, **item})
            target = written.structured_content["memory"]["id"]
            acked = time.perf_counter()
            text = f"{item['title']}\n{item['content']}"
            while time.perf_counter() - acked < limit_s:
                found = await client.call_tool("memory_search", {
                    "namespace": namespace, "query": text[:1000], "mode": "semantic",
                    "limit": 5})
                if any(r["id"] == target
                       for r in found.structured_content["results"]):
                    break
                await asyncio.sleep(0.05)
            delays.append(time.perf_counter() - acked)
            record(delays[-1])
            await asyncio.sleep(max(0.0, every - (time.perf_counter() - acked)))
    return delays


async def flood(base: str, namespace: str, clients: int, seconds: float, calls: Calls,
                seed: int = 0, stop=lambda: False) -> None:
    """`clients` clients of one tenant, each a loop of memory_remember and memory_search
    (hybrid), half each, for `seconds` or until `stop()`."""
    until = time.monotonic() + seconds
    qs = [t for _, t in project_corpus.queries(400, seed=seed + 3)]

    async def loop(worker: int) -> None:
        rng = random.Random(seed * 1000 + worker)
        n = 0
        async with mcp_client(base) as client:
            while time.monotonic() < until and not stop():
                n += 1
                if n % 2:
                    item = note(10**7 * (seed + 1) + worker * 10**5 + n, rng, long_every=0)
                    await calls.call(client, "remember", "memory_remember",
                                     {"namespace": namespace, **item})
                else:
                    await calls.call(client, "search", "memory_search",
                                     {"namespace": namespace, "query": rng.choice(qs)})

    await asyncio.gather(*(loop(w) for w in range(clients)))


async def wait_drained(base: str, timeout: float = 7200.0, progress: bool = False) -> float:
    """Seconds until the embedding queue is empty."""
    started = time.monotonic()
    async with mcp_client(base) as client:
        while True:
            stats = (await client.call_tool("stats", {})).structured_content
            pending = stats["embedding_queue"]["pending"]
            if progress:
                print(f"\r  embedding: {pending} pending   ", end="", flush=True)
            if pending == 0 and stats["embedding_model"]["state"] == "ready":
                if progress:
                    print()
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{pending} embedding jobs still pending")
            await asyncio.sleep(0.5)
