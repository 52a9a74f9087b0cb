"""Namespace tools: declare a project's profile once (`namespace_init`), read it back
(`namespace_profile`).

Thin: authorize the namespace first, then hand over to the use case (usecases/namespace_init.py:
which database answered, then the write) or storage, which validates the profile
(storage/profiles.py). The writer recorded is the token's surface, never an argument.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..runtime import Runtime
from ..usecases.namespace_init import namespace_init as declare
from .args import READ, WRITE, Namespace, RequestId
from .caller import authorize

Profile = Annotated[
    dict[str, Any],
    Field(description=(
        "Keys, all optional: description (<= 2000 chars); context_quota {KIND: share of "
        "memory_context's budget, sum <= 1; default DECISION .35, CONVENTION .25, FACT .2, "
        "TODO .1, NOTE .1}; reverify_days {KIND: 1-3650}; tool_profile core|full (advice); "
        "intent_gate off|on (previews before supersede and forget); tier2 off|on (a model "
        "adds concerns to previews). {}: the defaults.")),
]


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations={**WRITE, "idempotentHint": True})
    async def namespace_init(
        namespace: Namespace,
        profile: Profile,
        expected_version: Annotated[
            int | None, Field(description="From namespace_profile; omit: last writer "
                                          "wins.")
        ] = None,
        client_request_id: RequestId = None,
    ) -> dict[str, Any]:
        """Declare or change the project's profile (replaces it whole; read
        namespace_profile first to change one key). Same profile again: unchanged. Errors:
        CONFLICT (stale expected_version), IDEMPOTENCY_MISMATCH."""
        principal = authorize(namespace, write=True)
        return await declare(rt, principal, namespace, profile,
                             expected_version=expected_version,
                             client_request_id=client_request_id)

    @mcp.tool(annotations=READ)
    async def namespace_profile(namespace: Namespace) -> dict[str, Any]:
        """The project's profile (keys: see namespace_init); never initialised:
        version 0, defaults apply."""
        principal = authorize(namespace, write=False)
        return await rt.storage().namespace_profile(principal, namespace)
