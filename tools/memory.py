"""The versioned-memory writes: remember, revise, forget (the reads are tools/memory_reads.py).

Adapters: authorize the namespace first, then one call into usecases/writes.py (the intent
gate's preview, the write, pacing). The author of a write is the token's surface, never an
argument. Arguments are typed loosely on purpose (e.g. `kind: str` with an enum in the schema)
so a bad value is answered by our validation as INVALID_INPUT rather than by the framework.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..storage.memory_input import ORIGINS
from ..usecases import writes
from .args import WRITE, Kind, MemoryId, Namespace, RequestId
from .caller import authorize
from .gate import Confirmation
from .trust import client_info

Origin = Annotated[str | None, Field(
    description="user_stated if the user said it.",
    json_schema_extra={"enum": [*ORIGINS, None]})]
Model = Annotated[str | None, Field(description="Your model's name.")]
Claim = Annotated[dict[str, Any] | None, Field(
    description="{\"repo\", \"pr\"} or {\"repo\", \"branch\", \"sha\"}: coord_reconcile "
                "checks it.")]
Questions = Annotated[list[str] | None, Field(
    description="<= 3 questions it answers (<= 300 chars); on revise, []: none.")]
DerivedFrom = Annotated[list[Any] | None, Field(
    description="Up to 20 memory ids or {\"type\": memory|session|handoff|artifact, "
                "\"id\"}.")]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def memory_remember(
        namespace: Namespace,
        content: str,
        kind: Kind = "NOTE",
        title: str | None = None,
        tags: list[str] | None = None,
        key: str | None = None,
        supersedes: list[str] | None = None,
        client_request_id: RequestId = None,
        expires_at: Annotated[
            str | None, Field(description="ISO 8601 with timezone.")
        ] = None,
        metadata: dict[str, Any] | None = None,
        origin: Origin = None,
        model: Model = None,
        derived_from: DerivedFrom = None,
        claim: Claim = None,
        confirmation: Confirmation = None,
        questions: Questions = None,
    ) -> dict[str, Any]:
        """Save a decision, fact, convention, note or todo for later sessions and other
        clients; `questions` make it findable by what it answers. When a decision changes, list the
        old ids in `supersedes`: they retire in the same transaction (memory_revise rewords one
        memory). `key` names at most one ACTIVE memory. With the intent gate on, a supersede first
        answers outcome preview: repeat the call with its `confirmation`. Errors: NOT_FOUND,
        CONFLICT, TOO_LARGE, IDEMPOTENCY_MISMATCH, UNKNOWN_OUTCOME, CONFIRMATION_INVALID,
        CONFIRMATION_MISMATCH, CONFIRMATION_EXPIRED, CONFIRMATION_USED."""
        principal = authorize(namespace, write=True)
        return await writes.remember(
            rt, principal, namespace, content=content, kind=kind, title=title, tags=tags,
            key=key, supersedes=supersedes, client_request_id=client_request_id,
            expires_at=expires_at, metadata=metadata, origin=origin, model=model,
            derived_from=derived_from, claim=claim, confirmation=confirmation,
            client_info=client_info(), questions=questions)

    @mcp.tool(annotations=WRITE)
    async def memory_revise(
        namespace: Namespace,
        id: MemoryId,
        expected_revision: Annotated[
            int, Field(description="The revision you read.")
        ],
        content: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        client_request_id: RequestId = None,
        origin: Origin = None,
        model: Model = None,
        derived_from: DerivedFrom = None,
        questions: Questions = None,
    ) -> dict[str, Any]:
        """New revision of an ACTIVE memory if expected_revision is still current; omitted
        fields are kept. On CONFLICT, details hold the current revision. A different decision:
        memory_remember with supersedes. Errors: CONFLICT, NOT_FOUND, TOO_LARGE,
        IDEMPOTENCY_MISMATCH."""
        principal = authorize(namespace, write=True)
        return await writes.revise(
            rt, principal, namespace, id, expected_revision, content=content, title=title,
            tags=tags, client_request_id=client_request_id, origin=origin, model=model,
            derived_from=derived_from, client_info=client_info(), questions=questions)

    @mcp.tool(annotations={**WRITE, "destructiveHint": True, "idempotentHint": True})
    async def memory_forget(
        namespace: Namespace,
        id: MemoryId,
        reason: Annotated[str, Field(description="1-500 chars.")],
        confirmation: Confirmation = None,
    ) -> dict[str, Any]:
        """Retire a wrong or unwanted memory (DELETED): out of search and lists, kept in
        memory_history. If something replaces it, supersede instead. With the intent gate on,
        repeat the call with the preview's `confirmation`. Errors: NOT_FOUND, CONFLICT,
        CONFIRMATION_INVALID, CONFIRMATION_MISMATCH, CONFIRMATION_EXPIRED, CONFIRMATION_USED."""
        principal = authorize(namespace, write=True)
        return await writes.forget(rt, principal, namespace, id, reason,
                                   confirmation=confirmation)
