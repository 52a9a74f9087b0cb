"""The intent gate's area of the storage boundary (migration 0033; storage/postgres/work/gate.py,
docs/intent-gate.md): two-phase supersede and forget in namespaces whose profile turns
`intent_gate` on, intents and their outcomes, skills, and the gate's per-process cache."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal


class GateBackend(ABC):
    """Every method re-checks the caller's namespace scope (FORBIDDEN)."""

    @abstractmethod
    async def gate_hold(self, principal: Principal, namespace: str, tool: str,
                        arguments: dict[str, Any], confirmation: str | None, *,
                        targets: list[str]) -> dict[str, Any] | None:
        """None: go ahead with the write (the gate is off, or `confirmation` was valid for
        exactly these arguments and is now spent). Otherwise the preview to answer instead,
        having written nothing: {"outcome": "preview", "confirmation", "expires_in_seconds",
        "would_change", "dependents", "verified_persisted": false}. `targets`: the memory
        ids the write would retire. Raises CONFIRMATION_INVALID, CONFIRMATION_MISMATCH,
        CONFIRMATION_EXPIRED, CONFIRMATION_USED, INVALID_INPUT, FORBIDDEN."""

    @abstractmethod
    async def intent_open(self, principal: Principal, namespace: str, intent: Any, *,
                          limit: int = 10) -> dict[str, Any]:
        """Record an intent and answer what it touches: {"intent_id", "opened_at",
        "memories" (the ACTIVE memories the retrieval guard admits for its text), "answered",
        "degraded", "guidance" (every matching skill's), "intent_gate"}. Raises
        INVALID_INPUT, TOO_LARGE, FORBIDDEN (scope, read-only)."""

    @abstractmethod
    async def gate_close_outcome(self, principal: Principal, namespace: str, intent_id: str,
                                 outcome: str, *,
                                 client_request_id: str | None = None) -> dict[str, Any]:
        """Record what happened, once: {"outcome": "closed" | "replayed", "intent"}. Raises
        NOT_FOUND, CONFLICT (already closed: details hold the first outcome), INVALID_INPUT,
        IDEMPOTENCY_MISMATCH, FORBIDDEN."""

    @abstractmethod
    async def skill_define(self, principal: Principal, namespace: str, name: str,
                           trigger: Any, guidance: str, *,
                           expected_version: int | None = None) -> dict[str, Any]:
        """Create or update a skill: {"outcome": "created" | "updated" | "unchanged",
        "skill"}. With `expected_version` (0: not defined yet) it applies only at that
        version. Raises INVALID_INPUT (naming the field; nothing stored), TOO_LARGE,
        CONFLICT (another version is current: details hold the skill as it is now),
        FORBIDDEN."""

    @abstractmethod
    async def gate_cache_status(self, principal: Principal,
                                namespace: str) -> dict[str, Any]:
        """What this process has cached for the namespace and how fresh it is. Raises
        INVALID_INPUT, FORBIDDEN."""
