"""The versioned-memory area of the storage boundary."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal


class MemoryBackend(ABC):
    """Remember, revise, supersede, forget and read memories of one namespace.

    Every method takes the caller's `Principal` (the author of a write is its surface) and
    re-checks its namespace scope. Errors: INVALID_INPUT / TOO_LARGE (bad arguments),
    NOT_FOUND, CONFLICT, IDEMPOTENCY_MISMATCH, FORBIDDEN, RETRYABLE, UNKNOWN_OUTCOME,
    UNAVAILABLE.
    """

    @abstractmethod
    async def remember(
        self,
        principal: Principal,
        namespace: str,
        *,
        content: str,
        kind: str = "NOTE",
        title: str | None = None,
        tags: list[str] | None = None,
        key: str | None = None,
        supersedes: list[str] | None = None,
        client_request_id: str | None = None,
        expires_at: Any = None,
        metadata: dict[str, Any] | None = None,
        origin: str | None = None,
        model: str | None = None,
        derived_from: list[Any] | None = None,
        client_info: str | None = None,
        claim: dict[str, Any] | None = None,
        confirmation: str | None = None,
        questions: list[str] | None = None,
    ) -> dict[str, Any]:
        """{"outcome": created|deduplicated|replayed, "memory", "superseded", "quarantine",
        "verified_persisted"}. CONFLICT, nothing written: a `supersedes` target is not ACTIVE
        (details.not_active: what each is now), the key names another ACTIVE memory, or (with
        supersedes) the content is another ACTIVE memory's (details.existing). Provenance
        (memory_input.check_origin, check_label, check_derived_from): origin defaults to
        agent_inferred; derived_from entries must exist in the namespace (NOT_FOUND). `claim`
        (storage/claims.check_claim): a claim about a repository, attached to the memory (a
        deduplicated memory keeps one it has). `questions` (memory_input.check_questions): up
        to 3 questions the memory answers, stored with its revision and searched beside its
        content (migration 0040).

        The intent gate: in a namespace whose gate is on, a write with `supersedes` needs the
        `confirmation` of its preview (GateBackend.gate_preview, bound to exactly these
        arguments), spent with the write: without one it raises CONFIRMATION_REQUIRED and
        writes nothing. A confirmation given is verified and spent whatever the switch says:
        CONFIRMATION_INVALID, CONFIRMATION_MISMATCH, CONFIRMATION_EXPIRED, CONFIRMATION_USED."""

    @abstractmethod
    async def revise(
        self,
        principal: Principal,
        namespace: str,
        memory_id: str,
        expected_revision: int,
        *,
        content: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        client_request_id: str | None = None,
        origin: str | None = None,
        model: str | None = None,
        derived_from: list[Any] | None = None,
        client_info: str | None = None,
        questions: list[str] | None = None,
    ) -> dict[str, Any]:
        """Provenance and questions not given are kept ([] clears the questions).
        {"outcome": revised|replayed, "memory", ...}.
        CONFLICT when the compare-and-set did not apply: `expected_revision` is not current
        any more, or the memory is not ACTIVE; its details are what the memory is now
        (memory_dicts.memory_now: current_revision, current_content, current_author,
        current_at, status, superseded_by)."""

    @abstractmethod
    async def forget(
        self, principal: Principal, namespace: str, memory_id: str, reason: str, *,
        confirmation: str | None = None,
    ) -> dict[str, Any]:
        """{"outcome": forgotten|already_forgotten, "memory"}. CONFLICT for a SUPERSEDED
        memory, its details what it is now (with superseded_by). In a namespace whose intent
        gate is on, only with the `confirmation` of its preview, as `remember` with
        supersedes (CONFIRMATION_REQUIRED without one)."""

    @abstractmethod
    async def get_memory(
        self, principal: Principal, namespace: str, *, memory_id: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """One memory whatever its status (an audit read)."""

    @abstractmethod
    async def list_memories(
        self,
        principal: Principal,
        namespace: str,
        *,
        kind: str | None = None,
        tag: str | None = None,
        status: str = "ACTIVE",
        limit: int = 50,
        cursor: str | None = None,
        include_quarantined: bool = False,
        key_prefix: str | None = None,
    ) -> dict[str, Any]:
        """{"memories": [...], "next_cursor": str|None}, newest first, keyset-paginated;
        `key_prefix` keeps the memories whose key starts with it, character for character."""

    @abstractmethod
    async def memory_history(
        self, principal: Principal, namespace: str, memory_id: str
    ) -> dict[str, Any]:
        """The memory, its revisions, what superseded it (and `retired_at`, when it was
        superseded or forgotten) and what it superseded, corroborations."""

    @abstractmethod
    async def expire_due(self, batch: int = 1000) -> int:
        """Mark ACTIVE memories past expires_at EXPIRED, in every namespace; return how many."""
