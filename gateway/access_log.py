"""One structured log line per HTTP request, with the query string redacted.

uvicorn's own access log is off (logs.configure_logging): it would print `?token=...`.
The same place hands each request's path, status and duration to `observe` (the app's HTTP
metrics, memhub/metrics.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..logs import redact

logger = logging.getLogger("memhub.access")


class AccessLog:
    """Pure ASGI middleware, outermost: it sees every request and the status sent back."""

    def __init__(self, app, observe: Callable[[str, int, float], None] | None = None) -> None:
        self.app = app
        self.observe = observe

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 0}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            seconds = time.perf_counter() - started
            if self.observe is not None:
                self.observe(scope.get("path", ""), status["code"], seconds)
            query = scope.get("query_string", b"").decode("latin-1")
            path = scope.get("path", "") + (f"?{query}" if query else "")
            client = scope.get("client") or ("", 0)
            logger.info(
                "request",
                extra={
                    "method": scope.get("method"),
                    "path": redact(path),
                    "status": status["code"],
                    "ms": round(seconds * 1000, 2),
                    "client": client[0],
                },
            )
