"""Opaque cursors: a position in a namespace's rows, sealed so that a client can neither read
nor make one.

The positions are table-wide numbers: a listing's `seq` is one identity for every namespace's
rows, and the change feed's transaction id counts every writing transaction of the server. A
readable cursor would tell a tenant how many rows, or transactions, all the others made
between two of its reads. So a cursor is the position encrypted and authenticated with
AES-256-GCM under a server secret (`SECRET_NAME`), with a random nonce (two cursors for one
position differ) and, as associated data, what it pages (`purpose`) and the namespace: one
issued for another listing or another namespace does not open.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import InvalidInput

SECRET_NAME = "cursors"
_VERSION = b"\x02"
_KEY_ID_BYTES = 4
_NONCE_BYTES = 12
_TAG_BYTES = 16
_NUMBER = struct.Struct(">Q")  # a seq, an xid8 or an entry id: all below 2^64
MAX_CURSOR_CHARS = 120


class CursorNotOurs(ValueError):
    """Not a cursor this key sealed for this purpose and namespace (malformed, altered,
    another listing's or another namespace's)."""


class CursorOfAnotherKey(ValueError):
    """Sealed well, but under another key: another database's (a restore, another server)."""


def _key_id(key: bytes) -> bytes:
    # Names the key without revealing it, so another database's cursor is told apart from a
    # forged or altered one.
    return hmac.new(key, b"memhub.cursor.key-id", hashlib.sha256).digest()[:_KEY_ID_BYTES]


@dataclass(frozen=True)
class CursorSeal:
    """Seals and opens the cursors of one listing (`purpose`) of one namespace."""

    key: bytes
    purpose: str
    namespace: str

    def _bound(self) -> bytes:
        return b"\0".join((b"memhub.cursor", self.purpose.encode(),
                           self.namespace.encode("utf-8")))

    def seal(self, *numbers: int) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        plain = b"".join(_NUMBER.pack(n) for n in numbers)
        raw = _VERSION + _key_id(self.key) + nonce + AESGCM(self.key).encrypt(
            nonce, plain, self._bound())
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def open(self, cursor: str, count: int) -> tuple[int, ...]:
        """The `count` numbers `cursor` carries. Raises CursorNotOurs or CursorOfAnotherKey."""
        if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR_CHARS:
            raise CursorNotOurs(cursor)
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        except (ValueError, binascii.Error):
            raise CursorNotOurs(cursor) from None
        head = len(_VERSION) + _KEY_ID_BYTES + _NONCE_BYTES
        if len(raw) != head + count * _NUMBER.size + _TAG_BYTES or raw[:1] != _VERSION:
            raise CursorNotOurs(cursor)
        if not hmac.compare_digest(raw[1:1 + _KEY_ID_BYTES], _key_id(self.key)):
            raise CursorOfAnotherKey(cursor)
        try:
            plain = AESGCM(self.key).decrypt(raw[1 + _KEY_ID_BYTES:head], raw[head:],
                                             self._bound())
        except InvalidTag:
            raise CursorNotOurs(cursor) from None
        return tuple(_NUMBER.unpack_from(plain, i * _NUMBER.size)[0] for i in range(count))


def _not_issued() -> InvalidInput:
    return InvalidInput("cursor is not one this listing issued for this namespace",
                        field="cursor",
                        remedy="Pass next_cursor exactly as the previous page of this listing "
                               "gave it, or omit cursor to start from the first page.")


def encode_cursor(seal: CursorSeal, seq: int) -> str:
    return seal.seal(seq)


def decode_cursor(seal: CursorSeal, cursor: str | None) -> int | None:
    """The `seq` a listing's cursor stands for; INVALID_INPUT for anything this server did not
    issue for this listing and namespace (another database's included: a listing's cursor is
    short-lived, and starting again from the first page is the remedy either way)."""
    if cursor is None:
        return None
    try:
        return seal.open(cursor, 1)[0]
    except (CursorNotOurs, CursorOfAnotherKey):
        raise _not_issued() from None


def keyset_page(rows: list[dict[str, Any]], limit: int,
                to_dict: Callable[[dict[str, Any]], dict[str, Any]], seal: CursorSeal
                ) -> tuple[list[dict[str, Any]], str | None]:
    """(items, next_cursor) from `limit + 1` rows fetched in `seq` order: the extra row only
    says whether another page exists."""
    page = rows[:limit]
    next_cursor = encode_cursor(seal, page[-1]["seq"]) if len(rows) > limit else None
    return [to_dict(row) for row in page], next_cursor
