"""Operator-facing read: is the service healthy, and how much does it hold."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from ..runtime import Runtime
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
        only; the model's cache and worker counters are shown to all-namespace tokens.
        """
        principal = current_principal()
        backend = rt.storage()
        result: dict[str, Any] = {
            "version": rt.version,
            "surface": principal.surface,
            "database": "ok",
        }
        result.update(await backend.stats(principal))
        embedder = rt.embedder
        if embedder is not None:
            status = embedder.status()
            result["embedding_model"] = (status if principal.namespaces is None
                                         else scoped_model_status(status))
        return result
