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
        dry_run: Annotated[bool, Field(description="Return the operations without writing "
                                                   "any.")] = False,
    ) -> dict[str, Any]:
        """Consolidate a CLOSED session into project memory: a model reads its events and
        the similar ACTIVE memories and proposes ADD / UPDATE / MERGE / SUPERSEDE / NOOP
        operations, which are checked and applied through the normal writes (origin
        curated, derived_from the session).

        Use it once a session is closed. Fail-closed: an answer that is malformed, cut off,
        refused or names a memory it was not shown applies nothing ("outcome": "rejected"
        with a "reason"; a rate limit gives "retry_after_seconds"). Each operation has a
        "status": applied, replayed (a re-run: nothing new is written), proposed (dry_run),
        dropped (secret, personal data or instruction-shaped text), skipped (the write was
        refused, with its "code"), needs_confirmation (a MERGE or SUPERSEDE where the
        intent gate is on: nothing retired; apply it with memory_remember) or noop.
        Without a configured model key: {"curator_enabled": false, "operations": []}.
        Errors: NOT_FOUND, CONFLICT (session still open), FORBIDDEN (read-only token),
        INVALID_INPUT.
        """
        principal = authorize(namespace, write=True)
        return await curate(rt.storage(), rt.settings, principal, namespace, session_id,
                            dry_run=dry_run)
