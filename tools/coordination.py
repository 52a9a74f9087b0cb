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
            description="Memory ids whose claims to check now (up to 100); omitted: every "
                        "claim never checked or last checked over the recheck period ago.")
        ] = None,
    ) -> dict[str, Any]:
        """Check memories' claims about a repository against GitHub and record a verdict each.

        A claim (memory_remember's `claim`) says a pull request is merged ({"repo", "pr"}) or
        a branch's head is a commit ({"repo", "branch", "sha"}). Each check appends a verdict:
        current, stale, or unverifiable (evidence.reason says why: repository_not_granted
        until the operator grants this namespace the repository, no GitHub token, GitHub
        unreachable or rate-limited: never a guess). Every read of the memory then shows its
        claim with the latest verdict and its age. Quarantined memories are not checked.
        Returns {"github": {"configured", "rate_limited_for_seconds"}, "checked":
        [{"memory_id", "claim", "verdict", "evidence", "checked_at"}], "skipped":
        [{"memory_id", "reason"}] (when any)}. Errors: NOT_FOUND (an id without a claim here),
        INVALID_INPUT, TOO_LARGE, FORBIDDEN (read-only token or namespace outside scope).
        """
        principal = authorize(namespace, write=True)
        return await reconcile(rt, principal, namespace, ids)

    @mcp.tool(annotations=READ)
    async def coord_drift_scan(
        namespace: Namespace,
        all_namespaces: Annotated[bool, Field(
            description="Scan every namespace instead (tokens not scoped to namespaces "
                        "only).")] = False,
        limit: Annotated[int, Field(description="Findings per list (1-200).")] = DRIFT_LIMIT,
    ) -> dict[str, Any]:
        """Report what looks inconsistent in project memory; writes nothing.

        Lists: near_duplicates (two ACTIVE memories that say nearly the same thing in
        different words: merge or supersede one), stale_claims (ACTIVE memories whose claim
        GitHub last contradicted: revise or supersede them), contradictions (an ACTIVE memory
        and a newer ACTIVE DECISION sharing a tag: the decision may have replaced it without
        superseding it). Titles come wrapped as untrusted data. Errors: INVALID_INPUT,
        FORBIDDEN (namespace outside scope, or all_namespaces from a scoped token).
        """
        if all_namespaces:
            principal = current_principal()
            if principal.namespaces is not None:
                raise Forbidden("all_namespaces needs a token not scoped to namespaces",
                                remedy="Scan one namespace of your token's scope.")
            authorize(namespace, write=False)
            return await rt.storage().drift_scan(principal, None, limit=limit)
        principal = authorize(namespace, write=False)
        return await rt.storage().drift_scan(principal, [namespace], limit=limit)
