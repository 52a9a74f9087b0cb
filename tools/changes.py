"""The change feed tool: what changed in a namespace since a client last looked."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.changes import DEFAULT_LIMIT, MAX_LIMIT
from .args import READ, Namespace
from .caller import authorize


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_changes(
        namespace: Namespace,
        cursor: Annotated[str | None, Field(
            description="Your last next_cursor; omit the first time.")] = None,
        limit: Annotated[int, Field(description=f"1-{MAX_LIMIT}")] = DEFAULT_LIMIT,
    ) -> dict[str, Any]:
        """What changed since you last looked, oldest first: keep next_cursor and pass it
        next time to get every later change exactly once; when has_more, call again. Errors:
        CURSOR_EXPIRED (re-read in full, then follow without a cursor)."""
        principal = authorize(namespace, write=False)
        return await rt.storage().memory_changes(principal, namespace, cursor=cursor,
                                                 limit=limit)
