"""Opaque keyset-pagination cursors: a position in a table's `seq` order, nothing else."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from ..errors import InvalidInput

_VERSION = "v1"


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"{_VERSION}:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    """The `seq` a cursor stands for; INVALID_INPUT for anything this server did not issue."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise InvalidInput("cursor is not one this server issued", field="cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, _, seq = raw.partition(":")
        if version != _VERSION:
            raise ValueError(raw)
        return int(seq)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput("cursor is not one this server issued", field="cursor") from None


def keyset_page(rows: list[dict[str, Any]], limit: int,
                to_dict: Callable[[dict[str, Any]], dict[str, Any]]
                ) -> tuple[list[dict[str, Any]], str | None]:
    """(items, next_cursor) from `limit + 1` rows fetched in `seq` order: the extra row only
    says whether another page exists."""
    page = rows[:limit]
    next_cursor = encode_cursor(page[-1]["seq"]) if len(rows) > limit else None
    return [to_dict(row) for row in page], next_cursor
