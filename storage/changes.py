"""The change feed area of the storage boundary: what changed in a namespace, in order, from a
cursor (migration 0028; the mechanism is explained in docs/change-feed.md).

A position in the feed is (transaction id, change id): changes are read in that order and only
from transactions that have all ended, so a position never has a change appear behind it
later. The cursor that carries it is opaque to clients, versioned and bound to its namespace;
anything this server did not issue is INVALID_INPUT.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_VERSION = "f1"
_CURSOR_MAX = 120
_BAD_CURSOR_REMEDY = ("Pass next_cursor exactly as a memory_changes answer of this namespace "
                      "gave it, or omit cursor to read from the oldest change kept.")


@dataclass(frozen=True, order=True)
class FeedPosition:
    """Everything at or before (xid, change_id) has been read."""

    xid: int
    change_id: int


START = FeedPosition(0, 0)


def _namespace_tag(namespace: str) -> str:
    return hashlib.sha256(namespace.encode()).hexdigest()[:8]


def encode_feed_cursor(namespace: str, position: FeedPosition) -> str:
    raw = f"{_VERSION}.{_namespace_tag(namespace)}.{position.xid}.{position.change_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_feed_cursor(namespace: str, cursor: str | None) -> FeedPosition | None:
    """The position `cursor` stands for (None: from the start). INVALID_INPUT for a cursor this
    server did not issue for this namespace."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _CURSOR_MAX:
        raise InvalidInput("cursor is not one memory_changes issued", field="cursor",
                           remedy=_BAD_CURSOR_REMEDY)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        version, tag, xid, change_id = raw.split(".")
        if version != _VERSION or not (xid.isdigit() and change_id.isdigit()):
            raise ValueError(raw)
        position = FeedPosition(int(xid), int(change_id))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput("cursor is not one memory_changes issued", field="cursor",
                           remedy=_BAD_CURSOR_REMEDY) from None
    if tag != _namespace_tag(namespace):
        raise InvalidInput("cursor was issued for another namespace", field="cursor",
                           remedy=_BAD_CURSOR_REMEDY)
    return position


def check_feed_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
    return limit


class ChangeFeedBackend(ABC):
    """Read a namespace's change feed. Errors: INVALID_INPUT (namespace, cursor, limit),
    FORBIDDEN (the token may not read the namespace), CURSOR_EXPIRED, UNAVAILABLE."""

    @abstractmethod
    async def memory_changes(self, principal: Principal, namespace: str, *,
                             cursor: str | None = None,
                             limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        """Changes after `cursor` (None: from the oldest kept), oldest first, at most `limit`:
        {"changes": [{"change_id", "what", "target_type", "target_id" (none for "purged"),
        "revision", "surface", "at", "replacement_id"?}], "next_cursor", "has_more"}.
        `next_cursor` is always given (also when nothing is new): reading from it returns only
        what came after.
        CURSOR_EXPIRED when changes after `cursor` are no longer kept."""

    @abstractmethod
    async def change_feed_head(self, principal: Principal, namespace: str) -> str:
        """A cursor at the current end of the feed: reading from it returns the changes of
        every transaction still running now or started later (and those that committed just
        before, while an older one was still running); never one made after it is missed."""
