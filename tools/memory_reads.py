"""The versioned-memory reads: get, list, history (audit reads, whatever a memory's status).

Adapters: authorize the namespace first, then one call on the storage backend.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.memory_input import KINDS, LIST_STATUSES
from .args import READ, MemoryId, Namespace
from .caller import authorize


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_get(
        namespace: Namespace,
        id: Annotated[str | None, Field(description="The memory id (or give key).")] = None,
        key: Annotated[str | None, Field(description="The memory key (or give id).")] = None,
    ) -> dict[str, Any]:
        """Read one memory by id or key, whatever its status: {"memory": {...}}.

        An audit read: a SUPERSEDED memory comes back with status SUPERSEDED and
        superseded_by (read that one for the current answer). By key you get the ACTIVE
        holder, else the latest memory that held the key. Errors: NOT_FOUND, INVALID_INPUT.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().get_memory(principal, namespace, memory_id=id, key=key)

    @mcp.tool(annotations=READ)
    async def memory_list(
        namespace: Namespace,
        kind: Annotated[str | None, Field(json_schema_extra={"enum": [*KINDS, None]})] = None,
        tag: str | None = None,
        status: Annotated[str, Field(json_schema_extra={"enum": list(LIST_STATUSES)})] = "ACTIVE",
        limit: Annotated[int, Field(description="1-200")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")]
        = None,
        include_quarantined: bool = False,
        key_prefix: Annotated[str | None, Field(description="Only keys starting with this, "
                                                            "e.g. 'coord/'.")] = None,
    ) -> dict[str, Any]:
        """List memories newest first: {"memories": [...], "next_cursor"}.

        Default: ACTIVE, unexpired, not quarantined. Filter by kind, one tag and/or a key
        prefix; status SUPERSEDED, DELETED, EXPIRED or ALL for audits. Page with next_cursor
        (stable while others write). Errors: INVALID_INPUT (bad filter or cursor).
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().list_memories(
            principal, namespace, kind=kind, tag=tag, status=status, limit=limit,
            cursor=cursor, include_quarantined=include_quarantined, key_prefix=key_prefix,
        )

    @mcp.tool(annotations=READ)
    async def memory_history(namespace: Namespace, id: MemoryId) -> dict[str, Any]:
        """The audit trail of one memory: every revision (content, author, time), its status,
        superseded_by, the memories it superseded, and corroborations by other clients.
        Use it to learn why and when something changed. Errors: NOT_FOUND, INVALID_INPUT.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().memory_history(principal, namespace, id)
