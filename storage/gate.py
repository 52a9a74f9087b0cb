"""The intent gate's area of the storage boundary (migration 0033; storage/postgres/work/gate.py,
docs/intent-gate.md): the previews of two-phase supersede and forget in namespaces whose
profile turns `intent_gate` on (the writes themselves enforce the rule:
storage/postgres/memories/retire_gate.py), intents and their outcomes, skills, and the gate's
per-process cache."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal


class GateBackend(ABC):
    """Every method re-checks the caller's namespace scope (FORBIDDEN)."""

    @abstractmethod
    async def gate_preview(self, principal: Principal, namespace: str, tool: str,
                           arguments: dict[str, Any], *, targets: list[str],
                           fresh: bool = False) -> dict[str, Any] | None:
        """The preview to answer instead of a retiring write, having written nothing, or None
        when the namespace's gate is off (read from this process's cache, or from the
        database when `fresh`): {"outcome": "preview", "written": false, "tool",
        "would_change", "missing", "dependents", "confirmation" (signed, bound to this
        namespace, the calling token, `tool` and `arguments`), "expires_in_seconds",
        "verified_persisted": false}. `targets`: the memory ids the write would retire.
        The write itself (MemoryBackend.remember, forget) verifies and spends the
        confirmation. Raises INVALID_INPUT, FORBIDDEN."""

    @abstractmethod
    async def gate_review_material(self, principal: Principal, namespace: str, tool: str,
                                   arguments: dict[str, Any], *,
                                   targets: list[str]) -> dict[str, Any] | None:
        """What tier 2 of the gate shows its model for the preview of this write, or None
        when the namespace's profile does not ask for tier 2 (read from this process's
        cache): {"tool", "change" (the write's arguments that say what it does, bounded),
        "memories": [{"id", "role" (retired | dependent | related), "kind", "title",
        "status", "content"}]}, the memories the write retires, the ACTIVE ones derived from
        them, and those the retrieval guard admits for the change's text, each id once, at
        most gate_review.MEMORIES_MAX, texts cut to gate_review.CONTENT_CHARS. Every read is
        done and its connection returned before this answers. Raises INVALID_INPUT,
        FORBIDDEN."""

    @abstractmethod
    async def intent_open(self, principal: Principal, namespace: str, intent: Any, *,
                          limit: int = 10, also: list[str] | None = None) -> dict[str, Any]:
        """Record an intent and answer what it touches: {"intent_id", "opened_at",
        "memories" (the ACTIVE memories the retrieval guard admits for its text, or its first
        1000 characters: then "lookup_chars" says how many), "answered", "degraded",
        "guidance" (the matching skills' guidance, bounded: gate_input.select_guidance),
        "guidance_omitted" (only when a matching skill was left out: {"count", "skills"}),
        "intent_gate"}. Raises INVALID_INPUT, TOO_LARGE, FORBIDDEN (scope, read-only)."""

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
        QUOTA_EXCEEDED (a new skill in a namespace that holds gate_input.SKILLS_MAX),
        CONFLICT (another version is current: details hold the skill as it is now),
        FORBIDDEN."""

    @abstractmethod
    async def skill_get(self, principal: Principal, namespace: str,
                        name: str) -> dict[str, Any]:
        """One skill: {"skill": {"name", "trigger", "guidance", "version", "updated_at"}}.
        Raises NOT_FOUND, INVALID_INPUT, FORBIDDEN."""

    @abstractmethod
    async def gate_cache_status(self, principal: Principal,
                                namespace: str) -> dict[str, Any]:
        """What this process has cached for the namespace and how fresh it is. Raises
        INVALID_INPUT, FORBIDDEN."""
