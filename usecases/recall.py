"""`recall`'s use case: search, then the retrieval guard, each reported in `steps_run`
(usecases/steps.py).

search: memory_search in hybrid mode over stage 0 (degraded when the model is not loaded: the
candidates were found by their words only). guard: the retrieval guard keeps the results that
answer or may (storage/retrieval_guard.py). Both are essential: a failed search is the call's
error, as it always was.
"""

from __future__ import annotations

from typing import Any

from ..runtime import Runtime
from ..storage.principal import Principal
from ..storage.retrieval_guard import admitted
from .steps import StepLog

LEXICAL_ONLY = "embedding model not ready: candidates found by their words only"


async def recall(rt: Runtime, principal: Principal, namespace: str, query: str, *,
                 limit: int, kinds: list[str] | None,
                 also: list[str] | None) -> dict[str, Any]:
    """storage's recall answer with "steps_run". Raises what search raises (INVALID_INPUT,
    FORBIDDEN)."""
    steps = StepLog()

    async def search() -> dict[str, Any]:
        return await rt.storage().search(principal, namespace, query, limit=limit,
                                         kinds=kinds, mode="hybrid", also=also)

    found = await steps.run("search", search, essential=True)
    assert found is not None  # essential: a failure raised
    if found["degraded"]:
        steps.degrade(LEXICAL_ONLY)

    async def guard() -> dict[str, Any]:
        return admitted(found)

    answer = await steps.run("guard", guard, essential=True)
    assert answer is not None
    return {**answer, "steps_run": steps.records}
