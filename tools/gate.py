"""The intent gate's tools (docs/intent-gate.md): `intent_open`, `gate_close_outcome`,
`skill_define`, `skill_get`, `gate_cache_status`, and the `confirmation` argument of the
writes it holds (the preview, which memory_remember with supersedes and memory_forget ask
first, is usecases/writes.py; the rule itself is the storage write's).

Thin: authorize the namespace first, then hand over to storage.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from .args import READ, WRITE, Also, Namespace, RequestId
from .caller import authorize
from .hits import hit

Confirmation = Annotated[str | None, Field(
    description="From the preview (intent gate).")]
Intent = Annotated[dict[str, Any], Field(
    description="{\"text\": 1-2000 chars, \"kind\": e.g. deploy, \"tags\": [...]}.")]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def intent_open(
        namespace: Namespace,
        intent: Intent,
        also: Also = None,
        limit: Annotated[int, Field(description="1-50.")] = 10,
    ) -> dict[str, Any]:
        """Before acting (deploy, migrate, refactor, change a decision), say what you intend:
        get the memories it touches and the guidance of matching skills (follow it). Then
        gate_close_outcome with the intent_id. Errors: TOO_LARGE."""
        principal = authorize(namespace, write=True)
        opened = await rt.storage().intent_open(principal, namespace, intent, limit=limit,
                                                also=also)
        return {**opened, "memories": [hit(r["memory"], r["match"]["level"])
                                       for r in opened["memories"]]}

    @mcp.tool(annotations=WRITE)
    async def gate_close_outcome(
        namespace: Namespace,
        intent_id: str,
        outcome: Annotated[str, Field(description="What happened (1-2000 chars).")],
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Record what happened to an intent, once. Errors: NOT_FOUND, CONFLICT
        (already closed), IDEMPOTENCY_MISMATCH."""
        principal = authorize(namespace, write=True)
        return await rt.storage().gate_close_outcome(principal, namespace, intent_id, outcome,
                                                     client_request_id=client_request_id)

    @mcp.tool(annotations={**WRITE, "idempotentHint": True})
    async def skill_define(
        namespace: Namespace,
        name: Annotated[str, Field(description="1-64 of a-z0-9._-")],
        trigger: Annotated[Any, Field(description=(
            "JSON Logic over the intent ({\"var\": kind|tags|text}; and, or, if, !, !!, "
            "==, !=, in, contains), e.g. {\"contains\": [{\"var\": \"tags\"}, \"prod\"]}."))],
        guidance: Annotated[str, Field(description="What to do (1-4000 chars).")],
        expected_version: Annotated[int | None, Field(
            description="The version you read (0: new); omit: last writer wins.")] = None,
    ) -> dict[str, Any]:
        """Define or update a project rule: intent_open returns its guidance when an intent
        matches its trigger. At most 200 per namespace. Errors: TOO_LARGE, QUOTA_EXCEEDED,
        CONFLICT (stale expected_version)."""
        principal = authorize(namespace, write=True)
        return await rt.storage().skill_define(principal, namespace, name, trigger, guidance,
                                               expected_version=expected_version)

    @mcp.tool(annotations=READ)
    async def skill_get(
        namespace: Namespace,
        name: str,
    ) -> dict[str, Any]:
        """One skill, e.g. one named in intent_open's guidance_omitted. Errors: NOT_FOUND."""
        principal = authorize(namespace, write=False)
        return await rt.storage().skill_get(principal, namespace, name)

    @mcp.tool(annotations=READ)
    async def gate_cache_status(namespace: Namespace) -> dict[str, Any]:
        """What this server process has cached of the namespace's gate, and how fresh."""
        principal = authorize(namespace, write=False)
        return await rt.storage().gate_cache_status(principal, namespace)
