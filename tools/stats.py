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
        """memhub's health: version, database, embedding model and queue, memory counts per
        namespace your token may see."""
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
