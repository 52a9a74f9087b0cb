"""Tool profiles: which tools a token's client is shown and may call.

Every tool definition in `tools/list` costs the client's context on every turn, and some
clients use only the first few dozen tools. A token's `tool_profile` (api_tokens, migration
0027; set at creation) is `full`, every tool (the default, and every token made before
profiles), or `core`, the tools of a task's usual path. `tools/list` lists only the profile's
tools, and a call to any other is refused with TOOL_NOT_IN_PROFILE before it runs, so hiding
a tool is never the only thing keeping a client from it.

A read-only token is shown only the tools it may call: those marked read-only (MCP's
`readOnlyHint`), and the writes whose read form it may use (READ_ONLY_ALSO). A call to a write
it is not shown still reaches the tool, whose namespace check answers FORBIDDEN
(tools/caller.py): the list is a courtesy to the model, the check is the guard.

The core set is named here; a name that is not registered is simply absent from the list.
The server registers no tool per caller: the filter reads the principal the token gate put on
the request. Nothing here may be cached across requests (a tool list is per token), which is
why the server sets no client-side cache hint for tools/list.
"""

from __future__ import annotations

from typing import Any

from fastmcp.server.middleware import Middleware

from ..errors import ToolNotInProfile, Unauthorized
from ..storage.principal import Principal
from .caller import current_principal

CORE_TOOLS = frozenset({
    "session_bootstrap", "recall", "memory_remember", "memory_revise", "memory_forget",
    "memory_context", "handoff_save", "handoff_load",
})
# None: no restriction.
PROFILE_TOOLS: dict[str, frozenset[str] | None] = {"core": CORE_TOOLS, "full": None}
# Writes a read-only token may still call for what they read: session_bootstrap (everything
# but the session and the mark) and handoff_load with take=false (a peek).
READ_ONLY_ALSO = frozenset({"session_bootstrap", "handoff_load"})


def _caller() -> Principal | None:
    """Outside an authenticated request (no principal) nothing is filtered here: every tool
    refuses such a call anyway (UNAUTHORIZED, tools/caller.py)."""
    try:
        return current_principal()
    except Unauthorized:
        return None


def allowed_tools() -> frozenset[str] | None:
    """The tool names the caller's profile allows, None for all."""
    principal = _caller()
    if principal is None:
        return None
    # An unknown profile (the database's CHECK constraint allows none) gets the smallest set.
    return PROFILE_TOOLS.get(principal.tool_profile, CORE_TOOLS)


def read_only_may_call(tool: Any) -> bool:
    """Whether a read-only token is shown `tool` (a listed fastmcp Tool)."""
    hints = tool.annotations
    return (hints is not None and hints.read_only_hint is True) or tool.name in READ_ONLY_ALSO


class ToolProfiles(Middleware):
    def __init__(self) -> None:
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

    async def on_list_tools(self, context, call_next):
        tools = await call_next(context)
        allowed = allowed_tools()
        if allowed is not None:
            tools = [t for t in tools if t.name in allowed]
        principal = _caller()
        if principal is not None and principal.read_only:
            tools = [t for t in tools if read_only_may_call(t)]
        return tools

    async def on_call_tool(self, context, call_next):
        allowed = allowed_tools()
        name = getattr(context.message, "name", None)
        # A name the server does not offer at all goes on, to be answered NOT_FOUND.
        if allowed is not None and name not in allowed:
            offered = await self._offered(context)
            if name in offered:
                profile = current_principal().tool_profile
                raise ToolNotInProfile(
                    f"tool {name!r} is not in this token's tool profile {profile!r}",
                    tool=name, tool_profile=profile, allowed=sorted(allowed & offered),
                )
        return await call_next(context)
