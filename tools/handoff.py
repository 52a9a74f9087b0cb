"""Handoff tools: leave "here is where I stopped" for the next client, and pick one up once.

Thin: authorize the namespace first, then hand over to storage. The author (and the taker)
is the token's surface, never an argument.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from .args import READ, WRITE, Cursor, IncludeQuarantined, Namespace, RequestId
from .caller import authorize


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def handoff_save(
        namespace: Namespace,
        title: str,
        body: str,
        next_steps: list[str] | None = None,
        refs: list[str] | None = None,
        for_surface: Annotated[
            str | None, Field(description="web, cursor or desktop-cli; omit: anyone.")
        ] = None,
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Leave a handoff for the next client or session: where you stopped, what is
        left. Errors: TOO_LARGE, IDEMPOTENCY_MISMATCH, UNKNOWN_OUTCOME."""
        principal = authorize(namespace, write=True)
        return await rt.storage().handoff_save(
            principal, namespace, title=title, body=body, next_steps=next_steps, refs=refs,
            for_surface=for_surface, client_request_id=client_request_id,
        )

    @mcp.tool(annotations=WRITE)
    async def handoff_load(
        namespace: Namespace,
        id: Annotated[str | None, Field(description="Omit: the newest open one.")] = None,
        take: Annotated[bool, Field(description="false: read only.")] = True,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """Pick up a handoff to continue another client's work: by id, or the newest open
        one for your surface or anyone. take claims it: one client wins, the other gets CONFLICT.
        Errors: NOT_FOUND, CONFLICT."""
        principal = authorize(namespace, write=take)
        return await rt.storage().handoff_load(
            principal, namespace, handoff_id=id, take=take,
            include_quarantined=include_quarantined,
        )

    @mcp.tool(annotations=READ)
    async def handoff_list(
        namespace: Namespace,
        status: Annotated[str, Field(json_schema_extra={"enum": ["open", "taken", "all"]})]
        = "open",
        limit: Annotated[int, Field(description="1-100")] = 20,
        cursor: Cursor = None,
        include_quarantined: IncludeQuarantined = False,
    ) -> dict[str, Any]:
        """Handoffs newest first."""
        principal = authorize(namespace, write=False)
        return await rt.storage().handoff_list(
            principal, namespace, status=status, limit=limit, cursor=cursor,
            include_quarantined=include_quarantined,
        )
