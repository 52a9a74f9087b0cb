"""Operator-facing read: is the service healthy, and how much does it hold."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from ..runtime import Runtime
from ..storage.principal import Principal
from ..usecases.model_status import scoped_model_status
from .caller import current_principal


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
    async def stats() -> dict[str, Any]:
        """memhub's health: version, database, embedding model and queue, memory counts per
        namespace your token may see, your token's limits and use, namespace quotas."""
        principal = current_principal()
        backend = rt.storage()
        result: dict[str, Any] = {
            "version": rt.version,
            "surface": principal.surface,
            "database": "ok",
        }
        result.update(await backend.stats(principal))
        result["limits"] = token_limits(rt, principal)
        embedder = rt.embedder
        if embedder is not None:
            status = embedder.status()
            result["embedding_model"] = (status if principal.namespaces is None
                                         else scoped_model_status(status))
        return result


def token_limits(rt: Runtime, principal: Principal) -> dict[str, int]:
    """The caller's token's limits as applied, and its use in this process."""
    limits = principal.limits.resolved(rt.settings)
    use = rt.admission.usage(principal.token_id, limits.rate_per_minute, limits.rate_burst)
    out = {"max_in_flight": limits.max_in_flight, "in_flight": use["in_flight"]}
    if limits.rate_per_minute:
        out.update(rate_per_minute=limits.rate_per_minute, rate_burst=limits.rate_burst,
                   rate_available=use["rate_available"])
    return out
