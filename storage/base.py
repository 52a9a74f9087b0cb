"""The storage boundary. Tools speak to a `StorageBackend`; only its implementation sees SQL.

Each capability area declares its abstract methods in its own mixin ABC (`memories.py`,
`search.py`, `work.py`, `admin.py`), and
`StorageBackend` is their union, so areas can grow without editing one shared class body.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .activity import ActivityBackend
from .admin import AdminBackend
from .as_of import AsOfBackend
from .bootstrap import BootstrapBackend
from .changes import ChangeFeedBackend
from .claims import ClaimBackend
from .curation import CurationBackend
from .gate import GateBackend
from .limits import LimitsBackend
from .memories import MemoryBackend
from .oauth import OAuthBackend
from .principal import Principal
from .profiles import ProfileBackend
from .search import SearchBackend
from .trust import TrustBackend
from .work import WorkBackend


class CoreBackend(ABC):
    """Lifecycle, health and the token gate."""

    @abstractmethod
    async def open(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def ping(self) -> None:
        """Raise Unavailable when the database does not answer."""

    @abstractmethod
    async def authenticate(self, token: str) -> Principal | None:
        """The principal for an active token, or None. Constant-time on the token's hash."""

    @abstractmethod
    async def seed_surface_tokens(self, web_token: str | None) -> dict[str, str]:
        """Create missing surface tokens; return {surface: plaintext} for those created now."""

    @abstractmethod
    async def stats(self, principal: Principal) -> dict[str, Any]:
        """Counts per visible namespace and status, and queue depths."""

    @abstractmethod
    def pool_stats(self) -> dict[str, int]:
        """The connection pool's sizes now and its counters since it opened (for /metrics);
        no database round trip."""

    @abstractmethod
    async def embedding_queue_state(self) -> dict[str, Any]:
        """{pending, due, cap, oldest_due_seconds} of the embedding queue across every
        namespace (for /metrics): counts stop at `cap`, so the read costs the same whatever
        the backlog. Raises Unavailable (or another MemhubError) when the database fails."""


class StorageBackend(CoreBackend, AdminBackend, BootstrapBackend, MemoryBackend, SearchBackend,
                     AsOfBackend, WorkBackend,
                     ProfileBackend, OAuthBackend, ChangeFeedBackend, TrustBackend, ClaimBackend,
                     GateBackend, LimitsBackend,
                     CurationBackend, ActivityBackend, ABC):
    """Everything the tools may ask of storage."""
