"""Every MCP tool call counted and timed (memhub_tool_calls_total, memhub_tool_duration_seconds)
and recorded in the activity log (storage/activity.py: never an argument or a result); a write
refused by a namespace's quota counted as a limit refusal (memhub_limit_refusals_total).

Outermost of the server's middleware, so it counts what the client is answered: a failure's
code is ErrorMapping's, read back from the payload it made. A tool name the server does not
offer counts as "unknown": the name comes from the client, and a label takes every value it
is given, each one a series kept by the scraper.
"""

from __future__ import annotations

import time

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware

from ..errors import QuotaExceeded, Unauthorized
from ..metrics import UNKNOWN_TOOL, Metrics, code_label
from ..storage.activity import ActivityBuffer, tool_event
from .caller import current_principal
from .error_mapping import error_code


class ToolMetrics(Middleware):
    def __init__(self, metrics: Metrics, activity: ActivityBuffer) -> None:
        self.metrics = metrics
        self.activity = activity
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
            self._finished(context, tool, code, time.perf_counter() - started)
            if code == QuotaExceeded.code:
                self.metrics.limit_refused("quota")
            raise
        self._finished(context, tool, None, time.perf_counter() - started)
        return result

    def _finished(self, context, tool: str, code: str | None, seconds: float) -> None:
        self.metrics.tool_call(tool, code, seconds)
        self._record(context, tool, None if code is None else code_label(code), seconds)

    def _record(self, context, tool: str, code: str | None, seconds: float) -> None:
        """The call's activity row: of its arguments only `namespace` is read, and kept only
        when it names a namespace the token may see."""
        try:
            principal = current_principal()
        except Unauthorized:
            return  # not through the token gate (an in-process client): no caller to log
        arguments = getattr(context.message, "arguments", None) or {}
        self.activity.record(tool_event(
            tool, arguments.get("namespace") if isinstance(arguments, dict) else None,
            surface=principal.surface, token_id=principal.token_id,
            may_see=principal.can_see, error_code=code, seconds=seconds))
