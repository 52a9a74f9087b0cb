"""Trust tools: `memory_verify` (a memory checked and still right), `observation_log` (a memory
was wrong, misleading, missing or stale) and `coord_health` (what needs attention).

Thin: authorize the namespace first, then hand over to storage. Verifying and observing are
writes: a read-only token is refused.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from pydantic import Field

from ..runtime import Runtime
from ..storage.trust import OBSERVATION_KINDS
from .args import READ, WRITE, MemoryId, Namespace, RequestId
from .caller import authorize

ObservationKind = Annotated[str, Field(json_schema_extra={"enum": list(OBSERVATION_KINDS)})]


def client_info() -> str | None:
    """"name/version" of the MCP client when its session carries it (clientInfo of
    `initialize`); None otherwise (a stateless HTTP request carries no session's)."""
    try:
        params = get_context().session.client_params
    except (RuntimeError, AttributeError, LookupError):
        return None
    info = getattr(params, "clientInfo", None)
    if info is None:
        return None
    return f"{info.name}/{info.version}"[:200]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations={**WRITE, "idempotentHint": True})
    async def memory_verify(
        namespace: Namespace, id: MemoryId, client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Record that you checked an ACTIVE memory and it is still right, e.g. one marked
        needs_reverification. Errors: NOT_FOUND, CONFLICT (not ACTIVE), IDEMPOTENCY_MISMATCH."""
        principal = authorize(namespace, write=True)
        return await rt.storage().verify_memory(principal, namespace, id,
                                                client_request_id=client_request_id)

    @mcp.tool(annotations=WRITE)
    async def observation_log(
        namespace: Namespace,
        kind: ObservationKind,
        text: Annotated[str, Field(description="1-2000 chars.")],
        refs: Annotated[list[str] | None, Field(
            description="Memory ids concerned (<= 20).")] = None,
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Report that memory misled you: a memory was wrong, misleading or stale, or
        something was missing. Listed by coord_health until addressed. Errors: NOT_FOUND (a ref),
        TOO_LARGE, IDEMPOTENCY_MISMATCH."""
        principal = authorize(namespace, write=True)
        return await rt.storage().observation_log(principal, namespace, kind, text, refs,
                                                  client_request_id=client_request_id)

    @mcp.tool(annotations=READ)
    async def coord_health(namespace: Namespace) -> dict[str, Any]:
        """What needs attention: memories due for re-verification, old open handoffs, dead
        embedding jobs, quarantined writes, open observations."""
        principal = authorize(namespace, write=False)
        return await rt.storage().coord_health(principal, namespace)
