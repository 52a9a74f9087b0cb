"""A real memhub HTTP server for tests: uvicorn on a free loopback port, in a thread or a
separate process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from memhub.app import create_app, proxy_options
from memhub.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base_url: str, timeout: float = 60.0, *, want: int = 200) -> None:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            # Longer than /healthz's two pings of PING_TIMEOUT (2 s) in an outage.
            last = httpx.get(f"{base_url}/healthz", timeout=5.0)
            if last.status_code == want:
                return
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.05)
    raise TimeoutError(f"{base_url}/healthz never answered {want}: {last!r}")


class RunningServer:
    def __init__(self, base_url: str, settings: Settings, app=None, log_path=None) -> None:
        self.log_path = log_path
        self.base_url = base_url
        self.mcp_url = f"{base_url}/mcp"
        self.settings = settings
        self.app = app

    @asynccontextmanager
    async def client(self, token: str, *, via: str = "header"):
        """A real MCP client over Streamable HTTP, authenticated by header or query."""
        if via == "header":
            transport = StreamableHttpTransport(
                self.mcp_url, headers={"Authorization": f"Bearer {token}"}
            )
        else:
            transport = StreamableHttpTransport(f"{self.mcp_url}?token={token}")
        async with Client(transport, timeout=60) as client:
            yield client


@contextmanager
def thread_server(settings: Settings, port: int | None = None):
    """Serve create_app(settings) with uvicorn in a background thread, on `port` when the
    settings must know it in advance (MEMHUB_PORT names the OAuth issuer), else a free one."""
    port = port or free_port()
    app = create_app(settings)
    # The proxy options memhub's own `main` passes: forwarded headers are believed exactly as
    # in production (from MEMHUB_TRUSTED_PROXIES only), never by uvicorn's loopback default.
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="on",
        **proxy_options(settings),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base)
        yield RunningServer(base, settings, app)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def process_server(env_overrides: dict[str, str]):
    """Serve memhub as a separate OS process (python -m memhub.app), as a user would run it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.pop("DATABASE_URL", None)
    # Offline unless the test says otherwise: a test never fetches the model by accident.
    env.update({"MEMHUB_HOST": "127.0.0.1", "MEMHUB_PORT": str(port),
                "MEMHUB_EMBED_OFFLINE": "1"})
    env.update(env_overrides)
    # stderr goes to a file, not a pipe: an unread pipe fills up and blocks the server.
    log_dir = Path(tempfile.mkdtemp(prefix="memhub-proc-"))
    log_path = log_dir / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memhub.app"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base)
        yield RunningServer(base, Settings(), None, log_path), proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
