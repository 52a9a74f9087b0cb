"""The retrieval area of the storage boundary: hybrid search and token-budgeted context.

Bounds are checked here, before any connection is taken, and stated in the errors and README.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal, overload

from ..errors import InvalidInput
from .memory_input import KINDS

MODES = ("hybrid", "lexical", "semantic")
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_BUDGET_TOKENS = 32000
MAX_FILTER_TAGS = 32
MAX_TAG_CHARS = 64


class SearchBackend(ABC):
    """Retrieval over stage 0: only ACTIVE, unexpired, unquarantined memories of the namespace
    are ever candidates. Errors: INVALID_INPUT, FORBIDDEN, UNAVAILABLE (mode='semantic' without
    a model), RETRYABLE."""

    @abstractmethod
    async def search(
        self,
        principal: Any,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        mode: str = "hybrid",
    ) -> dict[str, Any]:
        """{"results": [{"memory", "score", "why": {lexical_rank, semantic_rank, distance,
        coverage}, "match": {admitted, reason, evidence}}], "mode", "degraded"}; best first, at
        most `limit`."""

    @abstractmethod
    async def recall(
        self,
        principal: Any,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
    ) -> dict[str, Any]:
        """memory_search (hybrid) keeping only what the retrieval guard admits:
        {"results": [...admitted, as search's...], "rejected": int, "reasons": {reason: n},
        "answered": bool, "degraded"}. No result is an answer: nothing recorded matches."""

    @abstractmethod
    async def context(
        self,
        principal: Any,
        namespace: str,
        query: str | None = None,
        *,
        budget_tokens: int = 2000,
        kinds: list[str] | None = None,
    ) -> dict[str, Any]:
        """{"memories", "tokens_used", "budget_tokens", "omitted", "rejected", "degraded"};
        "rejected": candidates the retrieval guard did not admit (with a query); tokens_used <=
        budget_tokens always."""


@overload
def check_query(query: Any, *, required: Literal[True]) -> str: ...
@overload
def check_query(query: Any, *, required: bool) -> str | None: ...
def check_query(query: Any, *, required: bool) -> str | None:
    if query is None or (isinstance(query, str) and not query.strip() and not required):
        if required:
            raise InvalidInput("query is required", field="query")
        return None
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be a non-blank string", field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}",
            field="query", limit=MAX_QUERY_CHARS,
        )
    return query.strip()


def check_int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}", field=field,
                           minimum=low, maximum=high)
    return value


def check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}", field="mode")
    return mode


def check_kinds(kinds: Any) -> list[str] | None:
    if kinds is None:
        return None
    if not isinstance(kinds, list) or not kinds or len(kinds) > len(KINDS):
        raise InvalidInput(f"kinds must be a non-empty list drawn from {', '.join(KINDS)}",
                           field="kinds")
    out = []
    for kind in kinds:
        if not isinstance(kind, str) or kind.upper() not in KINDS:
            raise InvalidInput(f"unknown kind {str(kind)[:40]!r}; one of {', '.join(KINDS)}",
                               field="kinds")
        out.append(kind.upper())
    return sorted(set(out))


def check_tags(tags: Any) -> list[str] | None:
    if tags is None:
        return None
    if not isinstance(tags, list) or not tags or len(tags) > MAX_FILTER_TAGS:
        raise InvalidInput(f"tags must be a list of 1 to {MAX_FILTER_TAGS} strings",
                           field="tags")
    for tag in tags:
        if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_CHARS:
            raise InvalidInput(f"each tag must be 1 to {MAX_TAG_CHARS} characters", field="tags")
    return list(dict.fromkeys(tags))
