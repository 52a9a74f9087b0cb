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
            description="next_cursor of your previous memory_changes call; omit the first "
                        "time (reads from the oldest change kept).")] = None,
        limit: Annotated[int, Field(description=f"1-{MAX_LIMIT}")] = DEFAULT_LIMIT,
    ) -> dict[str, Any]:
        """What changed in this project since you last looked, oldest first.

        Use it when you come back to a project (or before relying on what you read earlier):
        keep next_cursor and pass it next time; you get every change after it exactly once,
        including writes that were still committing when you last read. Each change: what
        (created, revised, superseded, forgotten, expired, quarantined, released, imported
        for memories; saved, taken for handoffs; closed for sessions; purged, without
        target_id: an operator removed one for good), target_type and target_id, revision
        (memories), replacement_id (superseded: read that memory instead), surface (which
        client did it; 'system' for background work) and at.
        Returns {"changes", "next_cursor", "has_more"}: next_cursor is always given; when
        has_more, call again at once. Read a changed item with memory_get, handoff_list or
        session_get. Errors: INVALID_INPUT (a cursor not issued for this namespace, a limit
        out of range), CURSOR_EXPIRED (changes after your cursor are no longer kept: re-read
        in full, then follow again without a cursor), FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().memory_changes(principal, namespace, cursor=cursor,
                                                 limit=limit)
