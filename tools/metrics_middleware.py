"""Every MCP tool call counted and timed (memhub_tool_calls_total, memhub_tool_duration_seconds);
a write refused by a namespace's quota counted as a limit refusal (memhub_limit_refusals_total).

Outermost of the server's middleware, so it counts what the client is answered: a failure's
code is ErrorMapping's, read back from the payload it made. A tool name the server does not
offer counts as "unknown": the name comes from the client, and a label takes every value it
is given, each one a series kept by the scraper.
"""

from __future__ import annotations

import time

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware

from ..errors import QuotaExceeded
from ..metrics import UNKNOWN_TOOL, Metrics
from .error_mapping import error_code


class ToolMetrics(Middleware):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._names: frozenset[str] | None = None

    async def _offered(self, context) -> frozenset[str]:
        """The server's tool names, listed once: tools are registered before it serves."""
        if self._names is None:
            server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
            if server is None:
                return frozenset()
            tools = await server.list_tools(run_middleware=False)
            self._names = frozenset(tool.name for tool in tools)
        return self._names

    async def on_call_tool(self, context, call_next):
        started = time.perf_counter()
        name = getattr(context.message, "name", None)
        tool = name if name in await self._offered(context) else UNKNOWN_TOOL
        try:
            result = await call_next(context)
        except ToolError as err:
            code = error_code(err)
            self.metrics.tool_call(tool, code, time.perf_counter() - started)
            if code == QuotaExceeded.code:
                self.metrics.limit_refused("quota")
            raise
        self.metrics.tool_call(tool, None, time.perf_counter() - started)
        return result
