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
    description="Only in a namespace with the intent gate on: the `confirmation` of the "
                "preview this call answered first; send it with exactly the same arguments "
                "to apply them.")]
Intent = Annotated[dict[str, Any], Field(
    description="What you are about to do: {\"text\": 1-2000 chars (the first 1000 choose "
                "the memories), \"kind\": optional label (e.g. deploy, migration, "
                "refactor), \"tags\": optional list (up to 32)}.")]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def intent_open(
        namespace: Namespace,
        intent: Intent,
        also: Also = None,
        limit: Annotated[int, Field(description="Memories to consider, 1-50.")] = 10,
    ) -> dict[str, Any]:
        """Before you act (deploy, migrate, refactor, change a decision), say what you intend
        and get back what project memory says about it.

        Returns {"intent_id", "opened_at", "memories" (the ACTIVE memories your intent
        touches or may contradict, as recall admits them: empty means nothing
        recorded bears on it), "answered", "degraded", "guidance" (the guidance of the
        skills whose trigger matches your intent, up to 10 and 8000 chars: follow it),
        "intent_gate"}; "guidance_omitted" {"count", "skills"} names matching skills left
        out (read each with skill_get). When done, call gate_close_outcome with the
        intent_id. Errors: INVALID_INPUT, TOO_LARGE, FORBIDDEN.
        """
        principal = authorize(namespace, write=True)
        opened = await rt.storage().intent_open(principal, namespace, intent, limit=limit,
                                                also=also)
        return {**opened, "memories": [hit(r["memory"], r["match"]["level"])
                                       for r in opened["memories"]]}

    @mcp.tool(annotations=WRITE)
    async def gate_close_outcome(
        namespace: Namespace,
        intent_id: Annotated[str, Field(description="The intent_id intent_open returned.")],
        outcome: Annotated[str, Field(description="What happened (1-2000 chars).")],
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Record what happened to an intent you opened, once.

        Returns {"outcome": "closed" | "replayed", "intent": {"id", "outcome", "closed_by",
        "closed_at", "opened_at"}}. Errors: NOT_FOUND, CONFLICT (already closed: details
        hold the first outcome), INVALID_INPUT, IDEMPOTENCY_MISMATCH, FORBIDDEN.
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().gate_close_outcome(principal, namespace, intent_id, outcome,
                                                     client_request_id=client_request_id)

    @mcp.tool(annotations={**WRITE, "idempotentHint": True})
    async def skill_define(
        namespace: Namespace,
        name: Annotated[str, Field(description="1-64 of a-z 0-9 . _ -; the same name "
                                               "updates the skill.")],
        trigger: Annotated[Any, Field(description=(
            "A JSON Logic rule over the intent: {\"var\": \"kind\"|\"tags\"|\"text\"}; "
            "operators and, or, if, !, !!, ==, !=, in, contains (case-insensitive "
            "substring or tag), e.g. {\"contains\": [{\"var\": \"tags\"}, \"prod\"]}."))],
        guidance: Annotated[str, Field(description="What an agent whose intent matches "
                                                   "should do (1-4000 chars).")],
        expected_version: Annotated[int | None, Field(
            description="The skill's version you read (0: not defined yet): then it applies "
                        "only if that is still current. Omit: last writer wins.")] = None,
    ) -> dict[str, Any]:
        """Define (or update) a project rule that intent_open applies: when an intent matches
        the trigger, its guidance is returned to the agent.

        Returns {"outcome": "created" | "updated" | "unchanged", "skill": {"name", "trigger",
        "guidance", "version", "updated_at"}}. A trigger that does not validate is refused,
        never stored. A namespace holds at most 200 skills, their triggers 32 KB together.
        Errors: INVALID_INPUT (naming the field), TOO_LARGE, QUOTA_EXCEEDED (past a namespace
        limit: details name it), CONFLICT (expected_version is stale: details hold the skill as
        it is now), FORBIDDEN.
        """
        principal = authorize(namespace, write=True)
        return await rt.storage().skill_define(principal, namespace, name, trigger, guidance,
                                               expected_version=expected_version)

    @mcp.tool(annotations=READ)
    async def skill_get(
        namespace: Namespace,
        name: Annotated[str, Field(description="The skill's name.")],
    ) -> dict[str, Any]:
        """Read one skill, e.g. one intent_open named in guidance_omitted.

        Returns {"skill": {"name", "trigger", "guidance", "version", "updated_at"}}.
        Errors: NOT_FOUND, INVALID_INPUT, FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().skill_get(principal, namespace, name)

    @mcp.tool(annotations=READ)
    async def gate_cache_status(namespace: Namespace) -> dict[str, Any]:
        """What this server process has cached of the namespace's gate and how fresh it is:
        {"cached", "intent_gate", "profile_version", "skills": [{"name", "version"}],
        "loaded_at", "age_seconds", "ttl_seconds", "listening" (changes from other processes
        arrive at once), "invalidations"}. Errors: INVALID_INPUT, FORBIDDEN.
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().gate_cache_status(principal, namespace)
