"""The session_bootstrap area of the storage boundary: what the bootstrap reads that no other
tool does (which database answered, the open handoffs a surface may pick up) and where each
token's last bootstrap left the namespace's change feed.

Every method takes the caller's `Principal` and re-checks its namespace scope before any
query. Errors: INVALID_INPUT, FORBIDDEN, RETRYABLE, UNAVAILABLE.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

HANDOFFS_SHOWN_MAX = 20
OVERVIEW_RECENT_MAX = 50


class BootstrapBackend(ABC):
    @abstractmethod
    async def database_identity(self, principal: Principal, namespace: str) -> dict[str, Any]:
        """{"instance_id", "server_version", "migration_level", "database_time", "pooled"}:
        two clients that see the same instance_id and migration level share one memory;
        `pooled` says whether this process reaches the database through a transaction pooler."""

    @abstractmethod
    async def open_handoffs(
        self, principal: Principal, namespace: str, *, limit: int = 5,
    ) -> dict[str, Any]:
        """Open, unquarantined handoffs the caller's surface may pick up (addressed to it or
        to anyone), newest first, never taken: {"handoffs": [...], "total": int} (total
        counts them all; at most `limit` <= HANDOFFS_SHOWN_MAX are shown)."""

    @abstractmethod
    async def embedding_backlog(self, principal: Principal, namespace: str) -> dict[str, Any]:
        """{"pending", "dead", "oldest_pending_seconds"} of the namespace's embedding jobs: how
        far semantic search lags its writes."""

    @abstractmethod
    async def bootstrap_overview(self, principal: Principal, namespace: str, *,
                                 recent: int = 10) -> dict[str, Any]:
        """What a token's first bootstrap is shown of the namespace, read at one position of
        the change feed: {"cursor" (that position: memory_changes from it returns only what
        comes after), "counts" (every change kept before it, by `what`), "recent" (the newest
        `recent` <= OVERVIEW_RECENT_MAX of them, oldest first), "active_memories" (live,
        unquarantined memories by kind)}."""

    @abstractmethod
    async def bootstrap_mark(self, principal: Principal, namespace: str) -> dict[str, Any] | None:
        """{"cursor", "marked_at"}: where this token's last bootstrap in `namespace` left the
        change feed; None before its first."""

    @abstractmethod
    async def save_bootstrap_mark(self, principal: Principal, namespace: str,
                                  cursor: str) -> None:
        """Move this token's mark in `namespace` to `cursor`. FORBIDDEN for a read-only token
        (a mark is a write)."""
