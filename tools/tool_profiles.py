"""Tool profiles: which tools a token's client is shown and may call.

Every tool definition in `tools/list` costs the client's context on every turn, and some
clients use only the first few dozen tools. A token's `tool_profile` (api_tokens, migration
0027; set at creation) is `full`, every tool (the default, and every token made before
profiles), or `core`, the tools of a task's usual path. `tools/list` lists only the profile's
tools, and a call to any other is refused with TOOL_NOT_IN_PROFILE before it runs, so hiding
a tool is never the only thing keeping a client from it.

The core set is named here; a name that is not registered is simply absent from the list.
The server registers no tool per caller: the filter reads the principal the token gate put on
the request. Nothing here may be cached across requests (a tool list is per token), which is
why the server sets no client-side cache hint for tools/list.
"""

from __future__ import annotations

from fastmcp.server.middleware import Middleware

from ..errors import ToolNotInProfile, Unauthorized
from .caller import current_principal

CORE_TOOLS = frozenset({
    "session_bootstrap", "recall", "memory_remember", "memory_revise", "memory_forget",
    "memory_context", "handoff_save", "handoff_load",
})
# None: no restriction.
PROFILE_TOOLS: dict[str, frozenset[str] | None] = {"core": CORE_TOOLS, "full": None}


def allowed_tools() -> frozenset[str] | None:
    """The tool names the caller's profile allows, None for all. Outside an authenticated
    request (no principal) nothing is filtered here: every tool refuses such a call anyway
    (UNAUTHORIZED, tools/caller.py)."""
    try:
        principal = current_principal()
    except Unauthorized:
        return None
    # An unknown profile (the database's CHECK constraint allows none) gets the smallest set.
    return PROFILE_TOOLS.get(principal.tool_profile, CORE_TOOLS)


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
        return tools if allowed is None else [t for t in tools if t.name in allowed]

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
