"""`namespace_init`'s use case: which database answered, then the profile written, each
reported in `steps_run` (usecases/steps.py).

database: the memhub database that holds the declaration (its instance_id and migration level:
two clients seeing one instance_id share one memory); it degrades, never fails the call.
profile: the declaration (storage/profiles.py), essential: a refused write is the call's error,
and nothing was written.
"""

from __future__ import annotations

from typing import Any

from ..runtime import Runtime
from ..storage.principal import Principal
from .bootstrap import which_database
from .steps import StepLog


async def namespace_init(rt: Runtime, principal: Principal, namespace: str, profile: Any, *,
                         expected_version: int | None,
                         client_request_id: str | None) -> dict[str, Any]:
    """The store's answer with "database" and "steps_run". Raises what the store's
    namespace_init raises (INVALID_INPUT, CONFLICT, FORBIDDEN, IDEMPOTENCY_MISMATCH)."""
    steps = StepLog()

    async def database() -> dict[str, Any]:
        # What tells two clients they declared into one memory; the rest is session_bootstrap's.
        identity = await which_database(rt, principal, namespace)
        return {k: identity[k] for k in ("instance_id", "migration_level")}

    async def write() -> dict[str, Any]:
        return await rt.storage().namespace_init(
            principal, namespace, profile, expected_version=expected_version,
            client_request_id=client_request_id)

    identity = await steps.run("database", database)
    answer = await steps.run("profile", write, essential=True)
    assert answer is not None  # essential: a refusal raised
    return {**answer, "database": identity, "steps_run": steps.records}
