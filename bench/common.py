"""A throwaway memhub for benchmarks: embedded PostgreSQL in a temp dir, migrated, served by
memhub's own process on a loopback port, with a known token. Nothing is mocked: the benchmarks
drive it through a real MCP client over HTTP, like any connector."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"  # raw results; docs/performance.md cites them by name
TOKEN = "mh_bench_" + "0" * 32


def provenance() -> dict[str, str]:
    """When and on which code a result was measured: the UTC date, the commit, and whether the
    working tree differed from it. Every figure quoted in docs/ names these."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short=7", "HEAD")
        modified = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError):
        commit, modified = "unknown", False
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": commit,
            "tree": "modified" if modified else "clean"}


def default_out(kind: str) -> Path:
    """bench/results/<kind>-<date>-<commit>.json: a run never overwrites another day's."""
    stamp = provenance()
    return RESULTS / f"{kind}-{stamp['date']}-{stamp['commit']}.json"


def write_result(path: str | Path, report: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


def machine() -> str:
    cpus = os.cpu_count()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.processor() or platform.machine()} ({cpu_model()}), {cpus} cores, " \
           f"{mem:.0f} GiB, Python {platform.python_version()}, " \
           f"{platform.system()} {platform.release()}"


def cpu_model() -> str:
    """The CPU's name and its widest vector extensions, from /proc/cpuinfo (Linux): the query
    model's 8-bit kernels run at very different speeds with and without AVX-512 VNNI
    (docs/performance.md)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name")), "unknown CPU")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines()
                      if line.startswith("flags")), []))
    vector = [f for f in ("avx512f", "avx512_vnni", "avx_vnni", "avx2") if f in flags]
    return f"{name}; {' '.join(vector) or 'no AVX2'}"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(percentile(values, 95), 2),
        "p99": round(percentile(values, 99), 2),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def local_memhub(**overrides):
    """Yield (base_url, settings, admin_dsn) for a fresh memhub on embedded PostgreSQL.

    memhub runs as its own process (`python -m memhub.app`), so the benchmark's
    client never shares an interpreter or a GIL with the server it measures. `overrides` are
    Settings fields, passed as MEMHUB_* environment variables."""
    from memhub.config import Settings
    from memhub.storage.postgres.embedded import EmbeddedPostgres

    workdir = Path(tempfile.mkdtemp(prefix="memhub-bench-"))
    cluster = EmbeddedPostgres(workdir)
    dsn = cluster.start()
    port = free_port()
    # The benchmarks' clients share one token and stand for many clients with tokens of their
    # own: under the default per-token limit they would measure that limit, not the server.
    values = {"mcp_auth_token": TOKEN, "data_dir": workdir, "log_level": "WARNING",
              "port": port, "token_max_in_flight": 1000, **overrides}
    settings = Settings(database_url=dsn, **values)
    env = {**os.environ, "DATABASE_URL": dsn}
    env.update({f"MEMHUB_{key.upper()}": str(value) for key, value in values.items()})
    env["MCP_AUTH_TOKEN"] = TOKEN
    log = open(workdir / "memhub.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "memhub.app"], env=env, cwd=ROOT,
                              stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base, f"memhub (log: {workdir / 'memhub.log'})")
        yield base, settings, dsn
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def wait_healthy(server: subprocess.Popen, base: str, what: str,
                 timeout: float = 120.0) -> None:
    """Return once `base`/healthz answers 200; raise if `server` exits or `timeout` passes
    first (the caller stops the process)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"{what} exited with {server.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not become healthy in {timeout:.0f} s")


@asynccontextmanager
async def mcp_client(base_url: str, token: str = TOKEN):
    transport = StreamableHttpTransport(
        f"{base_url}/mcp", headers={"Authorization": f"Bearer {token}"}
    )
    async with Client(transport, timeout=300) as client:
        yield client


async def wait_embedded(client, timeout: float = 3600.0, progress=None) -> float:
    """Wait until the embedding queue is empty and no namespace's word statistics are due for a
    recount (storage/postgres/retrieval/lexicon.py); return the seconds waited."""
    started = time.monotonic()
    while True:
        stats = (await client.call_tool("stats", {})).structured_content
        pending = stats["embedding_queue"]["pending"]
        if progress is not None:
            progress(pending)
        # Searches are measured with every vector written and the word statistics recounted.
        if pending == 0 and not stats["lexicon"]["due"]:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{pending} embedding jobs still pending")
        await asyncio.sleep(0.5)
