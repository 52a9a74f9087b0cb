"""The curator's area of the storage boundary (curator/apply.py, docs/curator.md): which
memories an earlier curation of a session wrote, so a session is curated once."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

MAX_CURATED = 100


class CurationBackend(ABC):
    @abstractmethod
    async def curated_from_session(
        self, principal: Principal, namespace: str, session_id: str
    ) -> list[dict[str, Any]]:
        """[{"id", "status", "kind"}] of the memories (any status) with origin `curated` whose
        provenance names the session (derived_from {"type": "session", "id"}), oldest first,
        at most MAX_CURATED. Errors: INVALID_INPUT (session_id not a UUID), FORBIDDEN."""
