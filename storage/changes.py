"""The change feed area of the storage boundary: what changed in a namespace, in order, from a
cursor (migration 0028; the mechanism is explained in docs/change-feed.md).

A position in the feed is (transaction id, change id): changes are read in that order and only
from transactions that have all ended, so a position never has a change appear behind it
later. The transaction id is the server's: it counts every writing transaction of every
tenant, so the cursor that carries a position is sealed (storage/cursors.py: AES-256-GCM
under a server secret, bound to the namespace). A client learns nothing from it, cannot make
or alter one, and a cursor issued for one namespace does not open in another (INVALID_INPUT).
"""

from __future__ import annotations

import base64
import binascii
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CursorExpired, InvalidInput
from .cursors import CursorNotOurs, CursorOfAnotherKey, CursorSeal

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
PURPOSE = "changes"
_LEGACY_PREFIX = b"f1."  # the unsealed format: a tag of the namespace and the position
_BAD_CURSOR_REMEDY = ("Pass next_cursor exactly as a memory_changes answer of this namespace "
                      "gave it, or omit cursor to read from the oldest change kept.")


@dataclass(frozen=True, order=True)
class FeedPosition:
    """Everything at or before (xid, change_id) has been read."""

    xid: int
    change_id: int


START = FeedPosition(0, 0)


def encode_feed_cursor(seal: CursorSeal, position: FeedPosition) -> str:
    return seal.seal(position.xid, position.change_id)


def _legacy(cursor: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, binascii.Error):
        return False
    return raw.startswith(_LEGACY_PREFIX)


def decode_feed_cursor(seal: CursorSeal, cursor: str | None) -> FeedPosition | None:
    """The position `cursor` stands for (None: from the start). INVALID_INPUT for a cursor this
    server did not issue for this namespace (malformed, altered, another namespace's);
    CURSOR_EXPIRED for one sealed under another database's key or of the unsealed format."""
    if cursor is None:
        return None
    try:
        xid, change_id = seal.open(cursor, 2)
    except CursorOfAnotherKey:
        raise CursorExpired("cursor was issued by another database",
                            namespace=seal.namespace) from None
    except CursorNotOurs:
        if isinstance(cursor, str) and _legacy(cursor):
            raise CursorExpired("cursor is of an earlier format, which this server no longer "
                                "reads", namespace=seal.namespace) from None
        raise InvalidInput("cursor is not one memory_changes issued for this namespace",
                           field="cursor", remedy=_BAD_CURSOR_REMEDY) from None
    return FeedPosition(xid, change_id)


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
