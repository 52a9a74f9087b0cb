"""`coord_curate`: a closed session's lasting knowledge written into project memory by a model
(curator/, docs/curator.md).

A write tool: a read-only token is refused (FORBIDDEN) even for dry_run, since a dry run
spends the deployment's model budget and shows the project's memories to the model.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..curator.apply import curate
from ..runtime import Runtime
from .args import WRITE, Namespace
from .caller import authorize
from .session import SessionId


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations={**WRITE, "idempotentHint": True})
    async def coord_curate(
        namespace: Namespace,
        session_id: SessionId,
        dry_run: Annotated[bool, Field(description="Propose only.")] = False,
    ) -> dict[str, Any]:
        """Consolidate a CLOSED session into memory: a model proposes add, update, merge,
        supersede or noop operations, applied through the normal writes (fail-closed: a bad answer
        applies nothing). Errors: NOT_FOUND, CONFLICT (session open)."""
        principal = authorize(namespace, write=True)
        return await curate(rt.storage(), rt.settings, principal, namespace, session_id,
                            dry_run=dry_run)
