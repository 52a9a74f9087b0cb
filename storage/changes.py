"""The change feed area of the storage boundary: what changed in a namespace, in order, from a
cursor (migration 0028; the mechanism is explained in docs/change-feed.md).

A position in the feed is (transaction id, change id): changes are read in that order and only
from transactions that have all ended, so a position never has a change appear behind it
later. The transaction id is the server's: it counts every writing transaction of every
tenant, so the cursor that carries a position is sealed. AES-256-GCM under a server secret
(`SECRET_NAME`), with a random nonce and the namespace as associated data: a client learns
nothing from it (two cursors at one position differ), cannot make or alter one, and a cursor
issued for one namespace does not open in another (INVALID_INPUT).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import CursorExpired, InvalidInput

if TYPE_CHECKING:  # storage.base imports this module
    from .principal import Principal

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
SECRET_NAME = "changes.cursor"
_VERSION = b"\x02"
_KEY_ID_BYTES = 4
_NONCE_BYTES = 12
_POSITION = struct.Struct(">QQ")  # xid8 and the entry's bigint id, both below 2^64
_SEALED_BYTES = len(_VERSION) + _KEY_ID_BYTES + _NONCE_BYTES + _POSITION.size + 16  # GCM tag
_CURSOR_MAX = 120
_LEGACY_PREFIX = b"f1."  # the unsealed format: a tag of the namespace and the position
_BAD_CURSOR_REMEDY = ("Pass next_cursor exactly as a memory_changes answer of this namespace "
                      "gave it, or omit cursor to read from the oldest change kept.")


@dataclass(frozen=True, order=True)
class FeedPosition:
    """Everything at or before (xid, change_id) has been read."""

    xid: int
    change_id: int


START = FeedPosition(0, 0)


def _key_id(key: bytes) -> bytes:
    # Names the key without revealing it: a cursor sealed under another database's key is
    # told apart from a forged or altered one.
    return hmac.new(key, b"memhub.changes.cursor.key-id", hashlib.sha256).digest()[:_KEY_ID_BYTES]


def _bound_to(namespace: str) -> bytes:
    return b"memhub.changes.cursor\0" + namespace.encode("utf-8")


def encode_feed_cursor(key: bytes, namespace: str, position: FeedPosition) -> str:
    nonce = os.urandom(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, _POSITION.pack(position.xid, position.change_id),
                                 _bound_to(namespace))
    raw = _VERSION + _key_id(key) + nonce + sealed
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _not_issued(message: str = "cursor is not one memory_changes issued for this namespace"
                ) -> InvalidInput:
    return InvalidInput(message, field="cursor", remedy=_BAD_CURSOR_REMEDY)


def decode_feed_cursor(key: bytes, namespace: str, cursor: str | None) -> FeedPosition | None:
    """The position `cursor` stands for (None: from the start). INVALID_INPUT for a cursor this
    server did not issue for this namespace (malformed, altered, another namespace's);
    CURSOR_EXPIRED for one sealed under another database's key or of the unsealed format."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _CURSOR_MAX:
        raise _not_issued()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, binascii.Error):
        raise _not_issued() from None
    if raw.startswith(_LEGACY_PREFIX):
        raise CursorExpired("cursor is of an earlier format, which this server no longer reads",
                            namespace=namespace)
    if len(raw) != _SEALED_BYTES or raw[:1] != _VERSION:
        raise _not_issued()
    key_id, nonce, sealed = (raw[1:1 + _KEY_ID_BYTES], raw[1 + _KEY_ID_BYTES:-32],
                             raw[-32:])
    if not hmac.compare_digest(key_id, _key_id(key)):
        raise CursorExpired("cursor was issued by another database", namespace=namespace)
    try:
        xid, change_id = _POSITION.unpack(AESGCM(key).decrypt(nonce, sealed,
                                                              _bound_to(namespace)))
    except InvalidTag:
        raise _not_issued() from None
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
        {"changes": [{"change_id", "what", "target_type", "target_id", "revision", "surface",
        "at", "replacement_id"?}], "next_cursor", "has_more"}. `next_cursor` is always given
        (also when nothing is new): reading from it returns only what came after.
        CURSOR_EXPIRED when changes after `cursor` are no longer kept."""

    @abstractmethod
    async def change_feed_head(self, principal: Principal, namespace: str) -> str:
        """A cursor at the current end of the feed: reading from it returns the changes of
        every transaction still running now or started later (and those that committed just
        before, while an older one was still running); never one made after it is missed."""
