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
        """Report memhub's health: server version, whether the database answers, the embedding
        model's state, memory counts per namespace and status (only namespaces your token may
        see), the embedding queue's depth, and which namespaces' word statistics (used to rank
        keyword matches) are waiting to be recounted. Use it to check the service before
        relying on it. A token scoped to some namespaces sees figures for those namespaces
        only; the model's cache and worker counters are shown to all-namespace tokens. Also
        your token's limits with its use (this call included) and namespaces' quotas.
        """
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
