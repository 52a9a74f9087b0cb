"""Operator-facing read: is the service healthy, and how much does it hold."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from ..runtime import Runtime
from .caller import current_principal

# What a token scoped to some namespaces sees of the embedding model: its configuration and
# health, nothing another tenant's activity moves. The query cache's size and hit counters,
# the prefetch counters and the worker's totals count every tenant's searches and writes: a
# scoped caller reading a hit after searching a string would learn that someone else searched
# it. An allowlist, so a counter added later stays server-wide until someone decides otherwise.
SCOPED_MODEL_FIELDS = ("state", "model", "reason", "load_seconds", "query_model")
SCOPED_WORKER_FIELDS = ("running", "listening")


def scoped_model_status(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: status[k] for k in SCOPED_MODEL_FIELDS if k in status}
    worker = status.get("worker")
    if worker is not None:
        out["worker"] = {k: worker[k] for k in SCOPED_WORKER_FIELDS if k in worker}
    return out


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
