"""The trust area of the storage boundary: verifications, observations, re-verification and
the namespace's health report (migration 0029; storage/postgres/memories/trust.py, health.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

OBSERVATION_KINDS = ("wrong", "misleading", "missing", "stale")


class TrustBackend(ABC):
    """Every method re-checks the caller's namespace scope (FORBIDDEN)."""

    @abstractmethod
    async def verify_memory(self, principal: Principal, namespace: str, memory_id: str, *,
                            client_request_id: str | None = None) -> dict[str, Any]:
        """Record that the caller's surface checked an ACTIVE memory now (database clock),
        without a new revision: {"outcome": "verified" | "replayed", "memory",
        "verification": {"revision", "verified_by", "verified_at"}, "verified_persisted"}.
        Raises INVALID_INPUT, NOT_FOUND, CONFLICT (not ACTIVE), FORBIDDEN (scope, read-only),
        IDEMPOTENCY_MISMATCH, RETRYABLE, UNKNOWN_OUTCOME."""

    @abstractmethod
    async def observation_log(self, principal: Principal, namespace: str, kind: str,
                              text: str, refs: list[str] | None = None, *,
                              client_request_id: str | None = None) -> dict[str, Any]:
        """Record a client's report that memories were wrong, misleading, missing or stale:
        {"outcome": "logged" | "replayed", "observation", "quarantine", "verified_persisted"}.
        The text is sanitized and screened (quarantined when instruction-shaped) and returned
        wrapped as untrusted data. Raises INVALID_INPUT, TOO_LARGE (text 2000, refs 20),
        NOT_FOUND (a ref is not a memory of the namespace), FORBIDDEN, IDEMPOTENCY_MISMATCH."""

    @abstractmethod
    async def reverification_due(self, principal: Principal, namespace: str, *,
                                 limit: int = 20) -> dict[str, Any]:
        """{"memories": [memory dicts, oldest first, with "last_verified_or_revised_at" and
        "reverify_days"], "total": int}: the live memories past their kind's re-verification
        period in the namespace's profile. Raises INVALID_INPUT, FORBIDDEN."""

    @abstractmethod
    async def coord_health(self, principal: Principal, namespace: str) -> dict[str, Any]:
        """What needs attention in the namespace, one section each (status ok|degraded):
        reverification, old_handoffs, embedding_jobs, quarantined, observations,
        word_statistics; "needs_attention" names the sections to look at. Raises
        INVALID_INPUT, FORBIDDEN."""

    @abstractmethod
    async def observation_totals(self, namespaces: list[str] | None = None
                                 ) -> dict[str, dict[str, int]]:
        """{namespace: {"total", "open"}} of logged observations (None: every namespace)."""
