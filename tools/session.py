"""Session tools: a session is an append-only, ordered log of what an agent did."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from .args import READ, WRITE, Cursor, IncludeQuarantined, Namespace, RequestId
from .caller import authorize

SessionId = str


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def session_create(
        namespace: Namespace, title: str, client_request_id: RequestId = None
    ) -> dict[str, Any]:
        """Start a session: an ordered log of one piece of work. Errors: TOO_LARGE,
        IDEMPOTENCY_MISMATCH, UNKNOWN_OUTCOME."""
        principal = authorize(namespace, write=True)
        return await rt.storage().session_create(
            principal, namespace, title=title, client_request_id=client_request_id
        )

    @mcp.tool(annotations=WRITE)
    async def session_append_event(
        namespace: Namespace,
        session_id: SessionId,
        type: Annotated[str, Field(description="e.g. step, decision (a-z0-9_.:-, <= 64).")],
        payload: Annotated[dict[str, Any] | list[Any] | str, Field(
            description="<= 64 KiB.")],
        event_id: Annotated[str | None, Field(
            description="Your id (<= 200 chars): a retry returns the first append.")] = None,
    ) -> dict[str, Any]:
        """Append an event to a session's log; the server numbers it (gap-free, in
        commit order). Pass event_id whenever you might retry. Errors: NOT_FOUND, CONFLICT
        (closed), TOO_LARGE, IDEMPOTENCY_MISMATCH, RETRYABLE, UNKNOWN_OUTCOME."""
        principal = authorize(namespace, write=True)
        return await rt.storage().session_append(
            principal, namespace, session_id=session_id, type=type, payload=payload,
            event_id=event_id,
        )

    @mcp.tool(annotations=WRITE)
    async def session_close(namespace: Namespace, session_id: SessionId) -> dict[str, Any]:
        """Close a session: its log stays, appends are refused. Errors: NOT_FOUND."""
        principal = authorize(namespace, write=True)
        return await rt.storage().session_close(principal, namespace, session_id=session_id)

    @mcp.tool(annotations=READ)
    async def session_get(
        namespace: Namespace, session_id: SessionId,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """One session: title, status, event count, who created and closed it. Errors:
        NOT_FOUND."""
        principal = authorize(namespace, write=False)
        return await rt.storage().session_get(
            principal, namespace, session_id=session_id, include_quarantined=include_quarantined
        )

    @mcp.tool(annotations=READ)
    async def session_list(
        namespace: Namespace,
        status: Annotated[str, Field(json_schema_extra={"enum": ["open", "closed", "all"]})]
        = "all",
        limit: Annotated[int, Field(description="1-100")] = 20,
        cursor: Cursor = None,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """Sessions newest first."""
        principal = authorize(namespace, write=False)
        return await rt.storage().session_list(
            principal, namespace, status=status, limit=limit, cursor=cursor,
            include_quarantined=include_quarantined,
        )

    @mcp.tool(annotations=READ)
    async def session_events(
        namespace: Namespace,
        session_id: SessionId,
        after_seq: int | None = None,
        limit: Annotated[int, Field(description="1-500")] = 100,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """A session's events in order; page with next_after_seq. Errors: NOT_FOUND."""
        principal = authorize(namespace, write=False)
        return await rt.storage().session_events(
            principal, namespace, session_id=session_id, after_seq=after_seq, limit=limit,
            include_quarantined=include_quarantined,
        )
