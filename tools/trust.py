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
        """Record that you checked an ACTIVE memory and it is still right (no new revision).

        Use it on memories marked needs_reverification (search, context, coord_health) once
        you have confirmed them; reword a memory with memory_revise instead. Returns
        {"outcome": "verified" | "replayed", "memory", "verification": {"revision",
        "verified_by", "verified_at"}, "verified_persisted"}. Errors: NOT_FOUND, CONFLICT
        (memory not ACTIVE: details are what it is now; verify details.superseded_by),
        FORBIDDEN (read-only token),
        INVALID_INPUT, IDEMPOTENCY_MISMATCH.
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().verify_memory(principal, namespace, id,
                                                client_request_id=client_request_id)

    @mcp.tool(annotations=WRITE)
    async def observation_log(
        namespace: Namespace,
        kind: ObservationKind,
        text: Annotated[str, Field(description="What was wrong or missing (1-2000 chars).")],
        refs: Annotated[list[str] | None, Field(
            description="Ids of the memories concerned (up to 20); none for something "
                        "missing.")] = None,
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Report that project memory misled you: a memory was wrong, misleading or stale,
        or something you needed was missing.

        kind: wrong, misleading, missing or stale. The report is counted on each memory in
        `refs` (memory_get shows observations) and listed by coord_health until the memory
        is revised, retired or verified. Returns {"outcome": "logged" | "replayed",
        "observation", "quarantine", "verified_persisted"}; your text comes back wrapped as
        untrusted data. Errors: INVALID_INPUT, TOO_LARGE, NOT_FOUND (a ref is not a memory
        of this namespace), FORBIDDEN (read-only token), IDEMPOTENCY_MISMATCH.
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().observation_log(principal, namespace, kind, text, refs,
                                                  client_request_id=client_request_id)

    @mcp.tool(annotations=READ)
    async def coord_health(namespace: Namespace) -> dict[str, Any]:
        """What in this project needs attention, in one report: memories due for
        re-verification (namespace profile reverify_days), open handoffs older than 72
        hours, dead embedding jobs, quarantined writes, observations not yet addressed, and
        whether the word statistics are due a recount.

        Each section has status ok or degraded (it could not be read; the others still
        are); "needs_attention" names the sections to act on. Observation texts are wrapped
        as untrusted data. Errors: INVALID_INPUT, FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().coord_health(principal, namespace)
