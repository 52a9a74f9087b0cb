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
    description="Where this came from: user_stated (the user said it), agent_inferred (you "
                "concluded it; the default), imported, curated.",
    json_schema_extra={"enum": [*ORIGINS, None]})]
Model = Annotated[str | None, Field(description="The model writing this, if you know it "
                                                "(up to 100 chars).")]
Claim = Annotated[dict[str, Any] | None, Field(
    description="A claim about a repository that coord_reconcile checks against GitHub: "
                "{\"repo\": \"owner/name\", \"pr\": 412} (the pull request is merged) or "
                "{\"repo\", \"branch\", \"sha\"} (the branch's head is that commit).")]
Questions = Annotated[list[str] | None, Field(
    description="Up to 3 questions this memory answers, in the words someone would ask them "
                "(<= 300 chars each): the memory is then found by them too. A revision "
                "without them keeps the previous ones; [] clears them.")]
DerivedFrom = Annotated[list[Any] | None, Field(
    description="What it was derived from (up to 20): memory ids, or {\"type\": memory|"
                "session|handoff|artifact, \"id\"}; each must exist in this namespace.")]


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
            str | None, Field(description="ISO 8601 with timezone; hidden from reads after.")
        ] = None,
        metadata: dict[str, Any] | None = None,
        origin: Origin = None,
        model: Model = None,
        derived_from: DerivedFrom = None,
        claim: Claim = None,
        confirmation: Confirmation = None,
        questions: Questions = None,
    ) -> dict[str, Any]:
        """Record a decision, fact, convention, note or todo in the shared project memory.

        Use it for what other sessions and tools should know later. When a decision changes,
        pass the old memory's id in `supersedes`: in one transaction the old ones become
        SUPERSEDED and this one ACTIVE, and searches in the old ones' words find this one
        (use memory_revise instead to reword the same fact). In a namespace with the intent
        gate on, a supersede first answers {"outcome": "preview", "confirmation", ...} and
        writes nothing: call again with the same arguments and that `confirmation`.
        kind: DECISION, FACT, CONVENTION, NOTE or TODO. `key` (optional) names at most one
        ACTIVE memory. Returns {"outcome": "created" | "deduplicated" (the same content is
        already ACTIVE: you get that memory, your assertion is recorded as corroboration) |
        "replayed", "memory", "superseded", "quarantine", "verified_persisted" (true once the
        write is committed durably)}; every memory carries its provenance (origin, model,
        derived_from), needs_reverification, and its claim with the latest verdict
        (current, stale, unverifiable or unchecked) when it has one. Limits: content up to
        the server's max (see TOO_LARGE), title 500, 32 tags of 64, key 200, supersedes 20,
        metadata 16 KB.
        Errors (nothing written): NOT_FOUND (a superseded id is missing), CONFLICT (a
        superseded id is not ACTIVE: details.not_active is what each is now; the key or,
        with supersedes, the content is another ACTIVE memory's: details.existing),
        INVALID_INPUT, TOO_LARGE, IDEMPOTENCY_MISMATCH, UNKNOWN_OUTCOME (replay the same
        client_request_id).
        """
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
            int, Field(description="The revision you read; the write applies only if it is "
                                   "still current.")
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
        """Write a new revision of one ACTIVE memory (correct or extend its wording).

        Compare-and-set: it applies only if `expected_revision` is still the memory's current
        revision. Omitted fields (provenance too) keep their value. Returns {"outcome":
        "revised" | "replayed", "memory", "verified_persisted"}. To replace a decision with
        a different one, use memory_remember with supersedes.
        Errors (nothing written): CONFLICT when another client revised it first or it is not
        ACTIVE (details: current_revision, current_content, current_author, current_at,
        status, superseded_by; decide, then retry with details.current_revision) or the new
        content is another ACTIVE memory's (details.existing); NOT_FOUND, INVALID_INPUT,
        TOO_LARGE, IDEMPOTENCY_MISMATCH.
        """
        principal = authorize(namespace, write=True)
        return await writes.revise(
            rt, principal, namespace, id, expected_revision, content=content, title=title,
            tags=tags, client_request_id=client_request_id, origin=origin, model=model,
            derived_from=derived_from, client_info=client_info(), questions=questions)

    @mcp.tool(annotations={**WRITE, "destructiveHint": True, "idempotentHint": True})
    async def memory_forget(
        namespace: Namespace,
        id: MemoryId,
        reason: Annotated[str, Field(description="Why (1-500 chars); kept in the audit.")],
        confirmation: Confirmation = None,
    ) -> dict[str, Any]:
        """Retire a memory that is wrong or no longer wanted: status DELETED.

        It disappears from search and lists; its revisions stay readable via memory_history.
        Returns {"outcome": "forgotten" | "already_forgotten", "memory"}. Prefer
        memory_remember with supersedes when something replaces it. With the intent gate on
        the first call answers a preview (outcome "preview"): repeat it with `confirmation`.
        Errors: NOT_FOUND, CONFLICT (already SUPERSEDED: details.superseded_by is its
        successor), INVALID_INPUT, CONFIRMATION_INVALID,
        CONFIRMATION_MISMATCH, CONFIRMATION_EXPIRED, CONFIRMATION_USED.
        """
        principal = authorize(namespace, write=True)
        return await writes.forget(rt, principal, namespace, id, reason,
                                   confirmation=confirmation)
