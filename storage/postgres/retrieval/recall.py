"""`RecallStore`: search that may answer nothing (a PostgresBackend mixin over `SearchStore`).

`recall` is memory_search in hybrid mode with the retrieval guard applied: the same candidates,
read the same way (stage 0 binds before anything is ranked, and the rows are re-read through
it), keeping only the results the guard admits (storage/retrieval_guard.py). An empty answer
means nothing recorded matches the question, which a client can say instead of guessing.
"""

from __future__ import annotations

from typing import Any

from ...principal import Principal
from ...retrieval_guard import admitted
from .search import SearchStore


class RecallStore(SearchStore):
    """Implements `SearchBackend.recall`; composed into `PostgresBackend` beside
    `SearchStore`, whose `search` it filters."""

    async def recall(
        self,
        principal: Principal,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        """The admitted results among memory_search's best `limit` (1-100), best first, each
        `strong` or `weak` (storage/retrieval_guard.py): {"results", "answered", "rejected",
        "reasons", "degraded"}. Raises INVALID_INPUT (bounds as memory_search), FORBIDDEN."""
        return admitted(await self.search(principal, namespace, query, limit=limit,
                                          kinds=kinds, mode="hybrid", also=also))
