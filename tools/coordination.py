"""Coordination tools over claims (docs/claims.md): `coord_reconcile` checks memories' claims
against GitHub and records verdicts (usecases/reconcile.py); `coord_drift_scan` reports what
looks inconsistent.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..errors import Forbidden
from ..runtime import Runtime
from ..usecases.reconcile import reconcile
from .args import READ, WRITE, Namespace
from .caller import authorize, current_principal

DRIFT_LIMIT = 50


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations=WRITE)
    async def coord_reconcile(
        namespace: Namespace,
        ids: Annotated[list[str] | None, Field(
            description="<= 100; omit: every claim due a check.")
        ] = None,
    ) -> dict[str, Any]:
        """Check memories' claims (a PR merged, a branch at a commit) against GitHub and
        record a verdict each: current, stale or unverifiable (evidence says why). Quarantined
        memories are skipped. Errors: NOT_FOUND (an id without a claim), TOO_LARGE."""
        principal = authorize(namespace, write=True)
        return await reconcile(rt, principal, namespace, ids)

    @mcp.tool(annotations=READ)
    async def coord_drift_scan(
        namespace: Namespace,
        all_namespaces: Annotated[bool, Field(
            description="Every namespace (unscoped tokens).")] = False,
        limit: Annotated[int, Field(description="Per list, 1-200.")] = DRIFT_LIMIT,
    ) -> dict[str, Any]:
        """Report what looks inconsistent; writes nothing: near-duplicates, claims GitHub
        contradicted, memories a newer DECISION with a shared tag may have replaced."""
        if all_namespaces:
            principal = current_principal()
            if principal.namespaces is not None:
                raise Forbidden("all_namespaces needs a token not scoped to namespaces",
                                remedy="Scan one namespace of your token's scope.")
            authorize(namespace, write=False)
            return await rt.storage().drift_scan(principal, None, limit=limit)
        principal = authorize(namespace, write=False)
        return await rt.storage().drift_scan(principal, [namespace], limit=limit)
