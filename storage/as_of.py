"""Reads as of a past time: the memories that were current then, each at the revision it had
then (docs/retrieval.md, As of a date).

The present reads never return a retired memory; `as_of` is the one door to the past, and
every answer through it says so: it carries `as_of`, and each memory that has changed since
(revised, superseded, forgotten, expired) carries `current_now: false`. A purged memory is
gone from the past as well: a purge removes its revisions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from .memory_dicts import iso, memory_dict

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

MAX_AS_OF_CHARS = 64
AS_OF_REMEDY = ("Give as_of as an ISO 8601 time with its zone, not later than now "
                "(e.g. 2026-01-31T12:00:00Z); omit it to read the present.")


def check_as_of(value: Any) -> datetime:
    """An ISO 8601 time with a zone. A time without one is refused, not read as UTC: a model
    writing a user's local time would be answered for a moment hours away. Whether it is past
    is the database's to say (AsOfBackend: its clock is the one every stored time is on)."""
    if not isinstance(value, str) or not value or len(value) > MAX_AS_OF_CHARS:
        raise InvalidInput(f"as_of must be an ISO 8601 time of at most {MAX_AS_OF_CHARS} "
                           "characters", field="as_of", remedy=AS_OF_REMEDY)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput("as_of is not an ISO 8601 time", field="as_of",
                           remedy=AS_OF_REMEDY) from None
    if parsed.tzinfo is None:
        raise InvalidInput("as_of needs a timezone (e.g. 2026-01-31T12:00:00Z)", field="as_of",
                           remedy=AS_OF_REMEDY)
    return parsed


def future_as_of(as_of: datetime) -> InvalidInput:
    """The error for an as_of later than the database's now: what the project will believe
    is not known yet."""
    return InvalidInput("as_of is later than now", field="as_of", remedy=AS_OF_REMEDY,
                        as_of=iso(as_of))


def memory_then(row: dict[str, Any]) -> dict[str, Any]:
    """A memory as it was at as_of, from a row of memhub_memories_at (as_of.sql): the memory
    dict of its revision then (`revision`, `updated_at` that revision's time, `status` its
    status then), and `current_now`."""
    then = {**row, "current_revision": row["revision"], "updated_at": row["revised_at"]}
    return {**memory_dict(then), "current_now": bool(row["current_now"])}


class AsOfBackend(ABC):
    """memory_search, memory_context, memory_list and memory_get as of a past time. Each
    takes `as_of` checked by check_as_of and raises INVALID_INPUT for one later than the
    database's now; otherwise as its present counterpart (SearchBackend, MemoryBackend), and
    its answer carries "as_of"."""

    @abstractmethod
    async def search_as_of(
        self, principal: Principal, namespace: str, query: str, as_of: datetime, *,
        limit: int = 10, kinds: list[str] | None = None, tags: list[str] | None = None,
        mode: str = "hybrid", also: list[str] | None = None,
    ) -> dict[str, Any]:
        """As SearchBackend.search over the memories current at as_of: their text then,
        ranked by its words and, where the stored vector is of that same text, by meaning.
        Empty when nothing was current then."""

    @abstractmethod
    async def context_as_of(
        self, principal: Principal, namespace: str, query: str | None, as_of: datetime, *,
        budget_tokens: int = 2000, kinds: list[str] | None = None,
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        """As SearchBackend.context over the memories current at as_of; each item that has
        changed since carries current_now: false."""

    @abstractmethod
    async def list_as_of(
        self, principal: Principal, namespace: str, as_of: datetime, *,
        kind: str | None = None, tag: str | None = None, status: str = "ACTIVE",
        limit: int = 50, cursor: str | None = None, include_quarantined: bool = False,
        key_prefix: str | None = None,
    ) -> dict[str, Any]:
        """The memories current at as_of, newest first: {"memories", "next_cursor", "as_of"}.
        INVALID_INPUT for a status other than ACTIVE (the audit listings are of the
        present)."""

    @abstractmethod
    async def get_as_of(
        self, principal: Principal, namespace: str, as_of: datetime, *,
        memory_id: str | None = None, key: str | None = None,
    ) -> dict[str, Any]:
        """One memory as it was at as_of, whatever its status then (an audit read):
        {"memory", "as_of"}. NOT_FOUND when it was born later (details.created_at), was
        purged (details.purged_at) or never was."""
