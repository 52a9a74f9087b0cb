"""The memory writes behind memory_remember, memory_revise and memory_forget: a retiring write
first asks the intent gate for its preview (`preview`, with tier 2's concerns where the
namespace's profile asks for them), then writes through storage, then answers once the
embedding queue has caught up enough (`paced`).

The gate's rule itself is the storage write's (MemoryBackend.remember / forget refuse a
retirement in a gated namespace without a confirmation, CONFIRMATION_REQUIRED): this use case
only turns the first call into the preview the caller confirms.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .. import admission
from ..curator import review
from ..errors import ConfirmationRequired
from ..runtime import Runtime
from ..storage import gate_confirm
from ..storage.principal import Principal


async def preview(rt: Runtime, principal: Principal, namespace: str, tool: str,
                  arguments: dict[str, Any], confirmation: str | None, targets: list[str],
                  *, fresh: bool = False) -> dict[str, Any] | None:
    """The intent gate's preview to answer instead of writing, or None to go ahead (see
    GateBackend.gate_preview; docs/intent-gate.md). A write that retires nothing, or that
    brings its confirmation, never asks. Where the profile asks for tier 2, the model's
    concerns are added to it (curator/review.py): they change nothing else in it, the
    confirmation included."""
    if confirmation is not None or not targets:
        return None
    storage = rt.storage()
    shown = await storage.gate_preview(principal, namespace, tool, arguments,
                                       targets=targets, fresh=fresh)
    if shown is None:
        return None
    # Read to the end, connection returned, before the model is asked (GateReviewStore).
    material = await storage.gate_review_material(principal, namespace, tool, arguments,
                                                  targets=targets)
    if material is None:
        return shown
    async with admission.waiting_outside():  # the model's time is not this host's CPU
        concerns = await review.review(rt.settings, material)
    return {**shown, **concerns}


async def _gated(rt: Runtime, principal: Principal, namespace: str, tool: str,
                 arguments: dict[str, Any], confirmation: str | None, targets: list[str],
                 write: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """The preview, or `write()`'s answer. A write refused CONFIRMATION_REQUIRED without a
    confirmation met a gate this process had cached as off (turned on elsewhere a moment
    ago): the preview is made from the database's switch instead."""
    shown = await preview(rt, principal, namespace, tool, arguments, confirmation, targets)
    if shown is not None:
        return shown
    try:
        result = await write()
    except ConfirmationRequired:
        shown = await preview(rt, principal, namespace, tool, arguments, confirmation,
                              targets, fresh=True)
        if shown is None:
            raise
        return shown
    return result


async def paced(rt: Runtime, result: dict[str, Any]) -> dict[str, Any]:
    """`result`, once the embedding queue has caught up enough that this write will be found
    by meaning soon (storage/postgres/retrieval/embedding_queue.py, Pacing). Only a write that
    queued an embedding waits: a replay or a duplicate answers at once."""
    if rt.embedding_worker is not None and result.get("outcome") in ("created", "revised"):
        async with admission.waiting_outside():  # the worker's turn, not this call's
            await rt.embedding_worker.pace()
    return result


async def remember(
    rt: Runtime, principal: Principal, namespace: str, *, content: str, kind: str,
    title: str | None, tags: list[str] | None, key: str | None, supersedes: list[str] | None,
    client_request_id: str | None, expires_at: str | None, metadata: dict[str, Any] | None,
    origin: str | None, model: str | None, derived_from: list[Any] | None,
    claim: dict[str, Any] | None, confirmation: str | None, client_info: str | None,
    questions: list[str] | None = None,
) -> dict[str, Any]:
    """memory_remember: previewed when it supersedes in a gated namespace, else written
    (with its confirmation, if any) and paced. Raises what StorageBackend.remember and
    gate_preview raise."""
    arguments = gate_confirm.remember_arguments(
        content=content, kind=kind, title=title, tags=tags, key=key, supersedes=supersedes,
        client_request_id=client_request_id, expires_at=expires_at, metadata=metadata,
        origin=origin, model=model, derived_from=derived_from, claim=claim, questions=questions)

    async def write() -> dict[str, Any]:
        return await paced(rt, await rt.storage().remember(
            principal, namespace, **arguments, client_info=client_info,
            confirmation=confirmation))

    return await _gated(rt, principal, namespace, "memory_remember", arguments, confirmation,
                        supersedes or [], write)


async def revise(
    rt: Runtime, principal: Principal, namespace: str, memory_id: str, expected_revision: int,
    *, content: str | None, title: str | None, tags: list[str] | None,
    client_request_id: str | None, origin: str | None, model: str | None,
    derived_from: list[Any] | None, client_info: str | None,
    questions: list[str] | None = None,
) -> dict[str, Any]:
    """memory_revise: the compare-and-set write, paced. Raises what StorageBackend.revise
    raises."""
    return await paced(rt, await rt.storage().revise(
        principal, namespace, memory_id, expected_revision, content=content, title=title,
        tags=tags, client_request_id=client_request_id, origin=origin, model=model,
        derived_from=derived_from, client_info=client_info, questions=questions,
    ))


async def forget(rt: Runtime, principal: Principal, namespace: str, memory_id: str,
                 reason: str, *, confirmation: str | None) -> dict[str, Any]:
    """memory_forget: previewed in a gated namespace, else retired (with its confirmation, if
    any). Raises what StorageBackend.forget and gate_preview raise."""

    async def write() -> dict[str, Any]:
        return await rt.storage().forget(principal, namespace, memory_id, reason,
                                         confirmation=confirmation)

    return await _gated(rt, principal, namespace, "memory_forget",
                        gate_confirm.forget_arguments(memory_id, reason), confirmation,
                        [memory_id], write)
