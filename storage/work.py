"""The work-surface area of the storage boundary: handoffs, sessions with event logs, artifacts.

Every method takes the caller's `Principal` (the author of a write is its surface) and
re-checks its namespace scope before any query. Errors: INVALID_INPUT / TOO_LARGE (bad
arguments, bounds in the message), NOT_FOUND, CONFLICT, IDEMPOTENCY_MISMATCH, FORBIDDEN,
RETRYABLE, UNKNOWN_OUTCOME, UNAVAILABLE.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .artifact_bytes import ArtifactBytes

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal


class WorkBackend(ABC):
    # --- handoffs -------------------------------------------------------------------------
    @abstractmethod
    async def handoff_save(
        self, principal: Principal, namespace: str, *, title: str, body: str,
        next_steps: list[str] | None = None, refs: list[str] | None = None,
        for_surface: str | None = None, client_request_id: str | None = None,
    ) -> dict[str, Any]:
        """{"outcome": created|replayed, "handoff", "quarantine"}."""

    @abstractmethod
    async def handoff_load(
        self, principal: Principal, namespace: str, *, handoff_id: str | None = None,
        take: bool = True, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        """One handoff (by id, or the latest open one for the caller's surface or anyone).

        With `take`, a compare-and-set marks it taken by the caller; CONFLICT (with taken_by,
        taken_at) when someone else got there first."""

    @abstractmethod
    async def handoff_list(
        self, principal: Principal, namespace: str, *, status: str = "open", limit: int = 20,
        cursor: str | None = None, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        """{"handoffs": [...], "next_cursor"} newest first."""

    # --- sessions -------------------------------------------------------------------------
    @abstractmethod
    async def session_create(
        self, principal: Principal, namespace: str, *, title: str,
        client_request_id: str | None = None,
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def session_append(
        self, principal: Principal, namespace: str, *, session_id: str, type: str,
        payload: Any, event_id: str | None = None,
    ) -> dict[str, Any]:
        """Append one event; its gap-free `seq` is assigned by the database."""

    @abstractmethod
    async def session_close(
        self, principal: Principal, namespace: str, *, session_id: str
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def session_get(
        self, principal: Principal, namespace: str, *, session_id: str,
        include_quarantined: bool = False,
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def session_list(
        self, principal: Principal, namespace: str, *, status: str = "all", limit: int = 20,
        cursor: str | None = None, include_quarantined: bool = False,
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def session_events(
        self, principal: Principal, namespace: str, *, session_id: str,
        after_seq: int | None = None, limit: int = 100, include_quarantined: bool = False,
    ) -> dict[str, Any]: ...

    # --- artifacts ------------------------------------------------------------------------
    @abstractmethod
    async def artifact_put(
        self, principal: Principal, namespace: str, *, name: str,
        content: bytes | ArtifactBytes, media_type: str,
    ) -> dict[str, Any]:
        """Store `content` once (by sha256) and reference it from `namespace` under `name`.
        Bytes are hashed here; ArtifactBytes (base64 decoded a piece at a time) arrive hashed."""

    @abstractmethod
    async def artifact_get(
        self, principal: Principal, namespace: str, *, sha256: str, offset: int = 0,
        length: int | None = None,
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def artifact_list(
        self, principal: Principal, namespace: str, *, limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]: ...

    @abstractmethod
    async def artifact_meta(self, principal: Principal, sha256: str) -> dict[str, Any]:
        """Size and media type of an artifact held by a namespace the token may read.

        NOT_FOUND when none does (whether or not it exists elsewhere)."""

    @abstractmethod
    def artifact_stream(
        self, principal: Principal, sha256: str, start: int, end: int
    ) -> AsyncIterator[bytes]:
        """Bytes [start, end) chunk by chunk, each chunk read in its own short transaction."""
