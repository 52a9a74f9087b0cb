"""The memory writes behind memory_remember, memory_revise and memory_forget: each asks the
intent gate first where it retires something (`hold`), then writes through storage, then
answers once the embedding queue has caught up enough (`paced`).
"""

from __future__ import annotations

from typing import Any

from ..runtime import Runtime
from ..storage.principal import Principal


async def hold(rt: Runtime, principal: Principal, namespace: str, tool: str,
               arguments: dict[str, Any], confirmation: str | None,
               targets: list[str]) -> dict[str, Any] | None:
    """The intent gate's preview to answer instead of writing, or None to go ahead (see
    GateBackend.gate_hold; docs/intent-gate.md). A write that retires nothing and carries no
    confirmation never asks."""
    if confirmation is None and not targets:
        return None
    return await rt.storage().gate_hold(principal, namespace, tool, arguments, confirmation,
                                        targets=targets)


async def paced(rt: Runtime, result: dict[str, Any]) -> dict[str, Any]:
    """`result`, once the embedding queue has caught up enough that this write will be found
    by meaning soon (storage/postgres/retrieval/embedding_queue.py, Pacing). Only a write that
    queued an embedding waits: a replay or a duplicate answers at once."""
    if rt.embedding_worker is not None and result.get("outcome") in ("created", "revised"):
        await rt.embedding_worker.pace()
    return result


async def remember(
    rt: Runtime, principal: Principal, namespace: str, *, content: str, kind: str,
    title: str | None, tags: list[str] | None, key: str | None, supersedes: list[str] | None,
    client_request_id: str | None, expires_at: str | None, metadata: dict[str, Any] | None,
    origin: str | None, model: str | None, derived_from: list[Any] | None,
    claim: dict[str, Any] | None, confirmation: str | None, client_info: str | None,
) -> dict[str, Any]:
    """memory_remember: held for the gate's preview when it supersedes (or confirms), else
    written and paced. Raises what StorageBackend.remember and gate_hold raise."""
    gated = await hold(rt, principal, namespace, "memory_remember", {
        "content": content, "kind": kind, "title": title, "tags": tags, "key": key,
        "supersedes": supersedes, "client_request_id": client_request_id,
        "expires_at": expires_at, "metadata": metadata, "origin": origin, "model": model,
        "derived_from": derived_from, "claim": claim}, confirmation, supersedes or [])
    if gated is not None:
        return gated
    return await paced(rt, await rt.storage().remember(
        principal, namespace, content=content, kind=kind, title=title, tags=tags,
        key=key, supersedes=supersedes, client_request_id=client_request_id,
        expires_at=expires_at, metadata=metadata, origin=origin, model=model,
        derived_from=derived_from, client_info=client_info, claim=claim,
    ))


async def revise(
    rt: Runtime, principal: Principal, namespace: str, memory_id: str, expected_revision: int,
    *, content: str | None, title: str | None, tags: list[str] | None,
    client_request_id: str | None, origin: str | None, model: str | None,
    derived_from: list[Any] | None, client_info: str | None,
) -> dict[str, Any]:
    """memory_revise: the compare-and-set write, paced. Raises what StorageBackend.revise
    raises."""
    return await paced(rt, await rt.storage().revise(
        principal, namespace, memory_id, expected_revision, content=content, title=title,
        tags=tags, client_request_id=client_request_id, origin=origin, model=model,
        derived_from=derived_from, client_info=client_info,
    ))


async def forget(rt: Runtime, principal: Principal, namespace: str, memory_id: str,
                 reason: str, *, confirmation: str | None) -> dict[str, Any]:
    """memory_forget: held for the gate's preview, else retired. Raises what
    StorageBackend.forget and gate_hold raise."""
    gated = await hold(rt, principal, namespace, "memory_forget",
                       {"id": memory_id, "reason": reason}, confirmation, [memory_id])
    if gated is not None:
        return gated
    return await rt.storage().forget(principal, namespace, memory_id, reason)
