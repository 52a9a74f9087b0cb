"""What a caller is shown of the embedding model's status (`stats`, session_bootstrap's health
step)."""

from __future__ import annotations

from typing import Any

# What a token scoped to some namespaces sees of the embedding model: its configuration and
# health, nothing another tenant's activity moves. The query cache's size and hit counters,
# the prefetch counters and the worker's totals count every tenant's searches and writes: a
# scoped caller reading a hit after searching a string would learn that someone else searched
# it. An allowlist, so a counter added later stays server-wide until someone decides otherwise.
# The detail of a missing model (an exception's text: paths, a mirror's address) and a fetch's
# progress are the server's business, not a tenant's.
SCOPED_MODEL_FIELDS = ("state", "model", "reason", "fix", "remedy", "load_seconds",
                       "query_model")
SCOPED_WORKER_FIELDS = ("running", "listening")


def scoped_model_status(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: status[k] for k in SCOPED_MODEL_FIELDS if k in status}
    worker = status.get("worker")
    if worker is not None:
        out["worker"] = {k: worker[k] for k in SCOPED_WORKER_FIELDS if k in worker}
    return out
