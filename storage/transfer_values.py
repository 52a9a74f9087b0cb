"""The values of an export file's records (storage/transfer_records.py), each checked as it is
read: a record from a damaged or hand-edited file is refused naming the field (INVALID_INPUT,
with the remedy DAMAGED), never written in part."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal, overload
from uuid import UUID

from ..errors import InvalidInput
from .transfer_format import DAMAGED

AUTHOR_MAX = 200
PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")


def ts(value: datetime | None) -> str | None:
    """A database time as the file writes it: UTC, microseconds always shown."""
    return value.astimezone(UTC).isoformat(timespec="microseconds") if value else None


def id_str(value: UUID | str | None) -> str | None:
    return str(value) if value is not None else None


def get_field(rec: dict[str, Any], key: str) -> Any:
    if key not in rec:
        raise InvalidInput(f"the record has no {key!r}", remedy=DAMAGED, field=key)
    return rec[key]


def time_field(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    value = get_field(rec, key)
    if value is None and nullable:
        return None
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise InvalidInput(f"{key} is not an ISO 8601 time with a zone", remedy=DAMAGED,
                           field=key)
    return ts(parsed)


@overload
def uuid_field(rec: dict[str, Any], key: str, *, nullable: Literal[False] = False) -> str: ...
@overload
def uuid_field(rec: dict[str, Any], key: str, *, nullable: bool) -> str | None: ...
def uuid_field(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    value = get_field(rec, key)
    if value is None and nullable:
        return None
    try:
        return str(UUID(value))
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput(f"{key} is not a UUID", remedy=DAMAGED, field=key) from None


def int_field(rec: dict[str, Any], key: str, minimum: int) -> int:
    value = get_field(rec, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{key} must be an integer >= {minimum}", remedy=DAMAGED, field=key)
    return value


def bool_field(rec: dict[str, Any], key: str) -> bool:
    value = get_field(rec, key)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key} must be true or false", remedy=DAMAGED, field=key)
    return value


def choice_field(rec: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = get_field(rec, key)
    if value not in allowed:
        raise InvalidInput(f"{key} must be one of {', '.join(allowed)}", remedy=DAMAGED,
                           field=key)
    return value


def label_field(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    """Who wrote something (a surface, or an operator label): short, printable."""
    value = get_field(rec, key)
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= AUTHOR_MAX \
            or not PRINTABLE.fullmatch(value):
        raise InvalidInput(f"{key} must be 1-{AUTHOR_MAX} printable characters",
                           remedy=DAMAGED, field=key)
    return value


def list_field(rec: dict[str, Any], key: str) -> list[Any]:
    value = get_field(rec, key)
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be a list", remedy=DAMAGED, field=key)
    return value


def object_field(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{key} must be an object", remedy=DAMAGED, field=key)
    return value
