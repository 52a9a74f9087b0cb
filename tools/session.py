"""Session tools: a session is an append-only, ordered log of what an agent did."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from .args import READ, WRITE, IncludeQuarantined, Namespace, RequestId
from .caller import authorize

SessionId = Annotated[str, Field(description="A session id (UUID) from session_create.")]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def session_create(
        namespace: Namespace, title: str, client_request_id: RequestId = None
    ) -> dict[str, Any]:
        """Start a session: an ordered log of the steps of one piece of work.

        Title up to 300 chars. Returns {"outcome": "created" | "replayed", "session",
        "quarantine"}. Errors: INVALID_INPUT, TOO_LARGE, IDEMPOTENCY_MISMATCH, UNKNOWN_OUTCOME
        (replay the same client_request_id).
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().session_create(
            principal, namespace, title=title, client_request_id=client_request_id
        )

    @mcp.tool(annotations=WRITE)
    async def session_append_event(
        namespace: Namespace,
        session_id: SessionId,
        type: Annotated[str, Field(description="Event type, e.g. 'step', 'decision', "
                                               "'tool_call' (a-z0-9_.:-, up to 64).")],
        payload: Annotated[dict[str, Any] | list[Any] | str, Field(
            description="The event's data: a JSON object (or list or string), up to 64 KiB.")],
        event_id: Annotated[str | None, Field(
            description="Your id for this event (1-200 chars). Makes the append exactly-once: "
                        "a retry returns the original event. Without it a retry after a lost "
                        "answer may append twice.")] = None,
    ) -> dict[str, Any]:
        """Append one event to a session's log; the server assigns its sequence number
        (gap-free 1, 2, 3, ... per session, in commit order).

        Pass event_id whenever you might retry. Returns {"outcome": "appended" | "replayed",
        "event", "quarantine"}. Errors: NOT_FOUND, CONFLICT (session closed: details
        closed_by, closed_at),
        IDEMPOTENCY_MISMATCH (event_id reused for a different event), INVALID_INPUT,
        TOO_LARGE, RETRYABLE / UNKNOWN_OUTCOME (without event_id: re-read the log before
        appending again).
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().session_append(
            principal, namespace, session_id=session_id, type=type, payload=payload,
            event_id=event_id,
        )

    @mcp.tool(annotations=WRITE)
    async def session_close(namespace: Namespace, session_id: SessionId) -> dict[str, Any]:
        """Close a session: it keeps its log but refuses further appends (CONFLICT).

        Returns {"outcome": "closed" | "already_closed", "session"}. Errors: NOT_FOUND.
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().session_close(principal, namespace, session_id=session_id)

    @mcp.tool(annotations=READ)
    async def session_get(
        namespace: Namespace, session_id: SessionId,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """One session: title, status, event_count, who created and closed it.

        Errors: NOT_FOUND (absent, or quarantined without include_quarantined).
        """
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
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")]
        = None,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """List sessions of a namespace, newest first. Returns {"sessions", "next_cursor"}."""
        principal = authorize(namespace, write=False)
        return await rt.storage().session_list(
            principal, namespace, status=status, limit=limit, cursor=cursor,
            include_quarantined=include_quarantined,
        )

    @mcp.tool(annotations=READ)
    async def session_events(
        namespace: Namespace,
        session_id: SessionId,
        after_seq: Annotated[int | None, Field(description="Return events with seq greater "
                                                           "than this (default 0).")] = None,
        limit: Annotated[int, Field(description="1-500")] = 100,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """Read a session's events in order (seq ascending).

        Returns {"events", "last_seq", "status", "next_after_seq"}: pass next_after_seq as
        after_seq for the next page (null when done). Payload strings are wrapped in
        untrusted-data markers. Quarantined events are skipped unless include_quarantined.
        Errors: NOT_FOUND, INVALID_INPUT.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().session_events(
            principal, namespace, session_id=session_id, after_seq=after_seq, limit=limit,
            include_quarantined=include_quarantined,
        )
