"""The retrieval area of the storage boundary: hybrid search and token-budgeted context.

Bounds are checked here, before any connection is taken, and stated in the errors and README.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal, overload

from ..errors import InvalidInput
from .memory_input import KINDS

MODES = ("hybrid", "lexical", "semantic")
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_BUDGET_TOKENS = 32000
MAX_FILTER_TAGS = 32
MAX_TAG_CHARS = 64
# Other phrasings of a question the calling model may add (`also`): as many as it usually
# writes, each the length of a short question (docs/retrieval.md, Phrasings).
MAX_ALSO = 4
MAX_ALSO_CHARS = 300


@dataclass(frozen=True)
class Ask:
    """A question as a search reads it: the caller's words and, optionally, other phrasings
    of it written by the calling model."""

    query: str
    also: tuple[str, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        return (self.query, *self.also)

    @property
    def words(self) -> str:
        """The text the lexical leg reads: the question's words first, then the phrasings'
        (memhub_query_terms keeps a word's first place, so the question's come first)."""
        return " ".join(self.texts)


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
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        """{"results": [{"memory", "score", "why": {lexical_rank, semantic_rank, distance,
        coverage}, "match": {admitted, level, reason, evidence}}], "mode", "degraded"}; best
        first, at most `limit`; while the namespace holds live memories, never empty. `also`:
        up to MAX_ALSO other phrasings of the query (check_also)."""

    @abstractmethod
    async def recall(
        self,
        principal: Any,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
        also: list[str] | None = None,
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
        also: list[str] | None = None,
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


def check_also(also: Any) -> tuple[str, ...]:
    """Other phrasings of a query, each bounded like one (blank or repeated ones dropped)."""
    if also is None:
        return ()
    if not isinstance(also, list) or not all(isinstance(a, str) for a in also):
        raise InvalidInput("also must be a list of strings", field="also")
    if len(also) > MAX_ALSO:
        raise InvalidInput(f"also takes at most {MAX_ALSO} phrasings", field="also",
                           limit=MAX_ALSO)
    out: list[str] = []
    for phrasing in also:
        if len(phrasing) > MAX_ALSO_CHARS:
            raise InvalidInput(f"a phrasing in also is over {MAX_ALSO_CHARS} characters",
                               field="also", limit=MAX_ALSO_CHARS)
        cleaned = " ".join(phrasing.split())
        if cleaned and cleaned not in out:
            out.append(cleaned)
    return tuple(out)


def check_ask(query: Any, also: Any) -> Ask:
    ask = Ask(check_query(query, required=True), check_also(also))
    return Ask(ask.query, tuple(a for a in ask.also if a != ask.query))


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
