"""A throwaway memhub for benchmarks: embedded PostgreSQL in a temp dir, migrated, served by
uvicorn on a loopback port in this process, with a known token. Nothing is mocked: the
benchmarks drive it through a real MCP client over HTTP, like any connector."""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import socket
import statistics
import tempfile
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

TOKEN = "mh_bench_" + "0" * 32


def machine() -> str:
    cpus = os.cpu_count()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.processor() or platform.machine()}, {cpus} cores, {mem:.0f} GiB, " \
           f"Python {platform.python_version()}, {platform.system()} {platform.release()}"


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def local_memhub(**overrides):
    """Yield (base_url, settings, admin_dsn) for a fresh memhub on embedded PostgreSQL."""
    from app import create_app
    from config import Settings
    from storage.embedded import EmbeddedPostgres

    workdir = Path(tempfile.mkdtemp(prefix="memhub-bench-"))
    cluster = EmbeddedPostgres(workdir)
    dsn = cluster.start()
    values = {
        "database_url": dsn,
        "mcp_auth_token": TOKEN,
        "data_dir": workdir,
        "log_level": "WARNING",
    }
    values.update(overrides)
    settings = Settings(**values)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_config=None,
                       access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    else:
        raise TimeoutError("memhub did not become healthy")
    try:
        yield base, settings, dsn
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@asynccontextmanager
async def mcp_client(base_url: str, token: str = TOKEN):
    transport = StreamableHttpTransport(
        f"{base_url}/mcp", headers={"Authorization": f"Bearer {token}"}
    )
    async with Client(transport, timeout=300) as client:
        yield client


async def wait_embedded(client, timeout: float = 3600.0, progress=None) -> float:
    """Wait until the embedding queue is empty; return the seconds waited."""
    started = time.monotonic()
    while True:
        stats = (await client.call_tool("stats", {})).structured_content
        pending = stats["embedding_queue"]["pending"]
        if progress is not None:
            progress(pending)
        if pending == 0:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{pending} embedding jobs still pending")
        await asyncio.sleep(0.5)
