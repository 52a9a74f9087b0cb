"""The versioned-memory reads: get, list, history (audit reads, whatever a memory's status).

Adapters: authorize the namespace first, then one call on the storage backend.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.as_of import check_as_of
from ..storage.memory_input import KINDS, LIST_STATUSES
from .args import READ, AsOf, Cursor, MemoryId, Namespace
from .caller import authorize


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=READ)
    async def memory_get(
        namespace: Namespace,
        id: str | None = None,
        key: Annotated[str | None, Field(description="Instead of id.")] = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        """One memory by id or key, whatever its status (an audit read): a SUPERSEDED one
        names superseded_by. Errors: NOT_FOUND."""
        principal = authorize(namespace, write=False)
        if as_of is not None:
            return await rt.storage().get_as_of(principal, namespace, check_as_of(as_of),
                                                memory_id=id, key=key)
        return await rt.storage().get_memory(principal, namespace, memory_id=id, key=key)

    @mcp.tool(annotations=READ)
    async def memory_list(
        namespace: Namespace,
        kind: Annotated[str | None, Field(json_schema_extra={"enum": [*KINDS, None]})] = None,
        tag: str | None = None,
        status: Annotated[str, Field(json_schema_extra={"enum": list(LIST_STATUSES)})] = "ACTIVE",
        limit: Annotated[int, Field(description="1-200")] = 50,
        cursor: Cursor = None,
        include_quarantined: bool = False,
        as_of: AsOf = None,
        key_prefix: Annotated[str | None, Field(description="Keys starting with this, e.g. "
                                                            "'coord/'.")] = None,
    ) -> dict[str, Any]:
        """Memories newest first: by default ACTIVE, unexpired, not quarantined. Other
        statuses for audits. Errors: INVALID_INPUT (bad filter or cursor)."""
        principal = authorize(namespace, write=False)
        if as_of is not None:
            return await rt.storage().list_as_of(
                principal, namespace, check_as_of(as_of), kind=kind, tag=tag, status=status,
                limit=limit, cursor=cursor, include_quarantined=include_quarantined,
                key_prefix=key_prefix)
        return await rt.storage().list_memories(
            principal, namespace, kind=kind, tag=tag, status=status, limit=limit,
            cursor=cursor, include_quarantined=include_quarantined, key_prefix=key_prefix,
        )

    @mcp.tool(annotations=READ)
    async def memory_history(namespace: Namespace, id: MemoryId) -> dict[str, Any]:
        """One memory's audit trail: every revision (content, author, time), status,
        what superseded it and when, what it superseded, corroborations. Errors: NOT_FOUND."""
        principal = authorize(namespace, write=False)
        return await rt.storage().memory_history(principal, namespace, id)
