"""Validation and normalisation of memory writes: bounds, kinds, ids, the dedup hash.

Pure functions, no I/O: the backend calls them before opening a transaction, so a bad request
costs no connection. Every bound is stated in the error message and in README.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import uuid
from datetime import datetime
from typing import Any

from ..errors import InvalidInput, TooLarge
from .sanitize import sanitize_text, screen_text
from .work_input import sanitize_json

KINDS = ("DECISION", "FACT", "CONVENTION", "NOTE", "TODO")
LIST_STATUSES = ("ACTIVE", "SUPERSEDED", "DELETED", "EXPIRED", "ALL")
MAX_TITLE = 500
MAX_TAGS = 32
MAX_TAG = 64
MAX_KEY = 200
MAX_SUPERSEDES = 20
MAX_METADATA_BYTES = 16 * 1024
MAX_REQUEST_ID = 200
MAX_REASON = 500
MAX_LIST_LIMIT = 200
# What a memory answers (migration 0040): a few questions, each the length of a query.
MAX_QUESTIONS = 3
MAX_QUESTION_CHARS = 300
# Provenance (migration 0029): who stated a memory, which model wrote it, what it came from.
ORIGINS = ("user_stated", "agent_inferred", "imported", "curated")
DEFAULT_ORIGIN = "agent_inferred"
MAX_MODEL = 100
MAX_CLIENT_INFO = 200
MAX_DERIVED_FROM = 20
SOURCE_TYPES = ("memory", "session", "handoff", "artifact")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SPACE = re.compile(r"\s+")


def normalise_for_dedup(text: str) -> str:
    """Case, whitespace and punctuation folded: "The queue runs on Redis." == "the queue runs
    on redis"."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in folded)
    normalised = _SPACE.sub(" ", kept).strip()
    # All-punctuation content would fold to "": keep such contents apart from each other.
    return normalised or _SPACE.sub(" ", folded).strip()


def content_hash(sanitized_content: str) -> bytes:
    return hashlib.sha256(normalise_for_dedup(sanitized_content).encode("utf-8")).digest()


def parse_id(value: Any, field: str = "id") -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidInput(f"{field} must be a UUID string", field=field)
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput(f"{field} is not a valid UUID: {value[:64]!r}", field=field) from None


def check_kind(kind: Any) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
    return kind


def check_content(content: Any, max_chars: int) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content must be a string", field="content")
    if len(content) > max_chars:
        raise TooLarge(
            f"content is {len(content)} characters; the limit is {max_chars}",
            field="content",
            limit=max_chars,
        )
    cleaned = sanitize_text(content)
    if not cleaned.strip():
        raise InvalidInput("content must not be empty", field="content")
    return cleaned


def check_questions(questions: Any) -> list[str] | None:
    """The questions a memory answers, cleaned like its content; None when not given (a
    revision then keeps the previous revision's), [] to clear them. Blank or repeated
    questions are dropped."""
    if questions is None:
        return None
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise InvalidInput("questions must be a list of strings", field="questions")
    if len(questions) > MAX_QUESTIONS:
        raise TooLarge(f"at most {MAX_QUESTIONS} questions", field="questions",
                       limit=MAX_QUESTIONS)
    out: list[str] = []
    for question in questions:
        if len(question) > MAX_QUESTION_CHARS:
            raise TooLarge(f"a question is longer than {MAX_QUESTION_CHARS} characters",
                           field="questions", limit=MAX_QUESTION_CHARS)
        cleaned = _SPACE.sub(" ", sanitize_text(question)).strip()
        if cleaned and cleaned not in out:
            out.append(cleaned)
    return out


def check_size(content: str, questions: list[str], max_chars: int) -> None:
    """The content and its questions together within the content limit: questions are text a
    model reads too, and they are stored with every revision."""
    total = len(content) + sum(len(q) for q in questions)
    if total > max_chars:
        raise TooLarge(f"content and questions are {total} characters; the limit is "
                       f"{max_chars}", field="questions", limit=max_chars)


def check_title(title: Any) -> str | None:
    if title is None:
        return None
    if not isinstance(title, str):
        raise InvalidInput("title must be a string", field="title")
    if len(title) > MAX_TITLE:
        raise TooLarge(f"title is longer than {MAX_TITLE} characters", field="title",
                       limit=MAX_TITLE)
    cleaned = sanitize_text(title).strip()
    return cleaned or None


def check_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list):
        raise InvalidInput("tags must be a list of strings", field="tags")
    if len(tags) > MAX_TAGS:
        raise TooLarge(f"at most {MAX_TAGS} tags", field="tags", limit=MAX_TAGS)
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidInput("tags must be strings", field="tags")
        tag = tag.strip()
        if not tag or len(tag) > MAX_TAG or _CONTROL.search(tag):
            raise InvalidInput(
                f"each tag must be 1-{MAX_TAG} printable characters", field="tags"
            )
        if tag not in out:
            out.append(tag)
    return out


def check_key(key: Any) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str):
        raise InvalidInput("key must be a string", field="key")
    key = key.strip()
    if not key or len(key) > MAX_KEY or _CONTROL.search(key):
        raise InvalidInput(f"key must be 1-{MAX_KEY} printable characters", field="key")
    return key


def check_supersedes(ids: Any) -> list[uuid.UUID]:
    if ids is None:
        return []
    if not isinstance(ids, list):
        raise InvalidInput("supersedes must be a list of memory ids", field="supersedes")
    if len(ids) > MAX_SUPERSEDES:
        raise TooLarge(f"supersedes names at most {MAX_SUPERSEDES} memories",
                       field="supersedes", limit=MAX_SUPERSEDES)
    parsed = [parse_id(v, "supersedes") for v in ids]
    if len(set(parsed)) != len(parsed):
        raise InvalidInput("supersedes names the same memory twice", field="supersedes")
    return parsed


def check_metadata(metadata: Any) -> dict[str, Any] | None:
    """The metadata as it will be stored: every string in it, keys too, sanitized like a
    title (a model reads it later); nesting bounded (sanitize_json) before it is encoded."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be a JSON object", field="metadata")
    cleaned = sanitize_json(metadata, field="metadata")
    try:
        encoded = json.dumps(cleaned, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("metadata must be plain JSON", field="metadata") from None
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise TooLarge(f"metadata is larger than {MAX_METADATA_BYTES} bytes of JSON",
                       field="metadata", limit=MAX_METADATA_BYTES)
    return cleaned


def check_request_id(request_id: Any) -> str | None:
    if request_id is None:
        return None
    if not isinstance(request_id, str) or not (1 <= len(request_id) <= MAX_REQUEST_ID) \
            or _CONTROL.search(request_id):
        raise InvalidInput(
            f"client_request_id must be 1-{MAX_REQUEST_ID} printable characters",
            field="client_request_id",
        )
    return request_id


def check_expires_at(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput("expires_at must be an ISO 8601 timestamp",
                               field="expires_at") from None
    else:
        raise InvalidInput("expires_at must be an ISO 8601 timestamp", field="expires_at")
    if parsed.tzinfo is None:
        raise InvalidInput("expires_at needs a timezone (e.g. 2030-01-01T00:00:00Z)",
                           field="expires_at")
    return parsed


def check_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput("reason must be a non-empty string", field="reason")
    if len(reason) > MAX_REASON:
        raise TooLarge(f"reason is longer than {MAX_REASON} characters", field="reason",
                       limit=MAX_REASON)
    return sanitize_text(reason).strip()


def check_revision(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput("expected_revision must be a positive integer",
                           field="expected_revision")
    return value


def check_key_prefix(prefix: Any) -> str | None:
    """A key prefix for memory_list (None: no filter): 1-MAX_KEY printable characters, not
    stripped (a prefix may end in a space). Matched with starts_with, never LIKE: `%` and `_`
    are characters like any other, and (LIKE not being leakproof) row-level security would
    keep LIKE from using an index. INVALID_INPUT otherwise."""
    if prefix is None:
        return None
    if (not isinstance(prefix, str) or not 0 < len(prefix) <= MAX_KEY
            or _CONTROL.search(prefix)):
        raise InvalidInput(f"key_prefix must be 1-{MAX_KEY} printable characters",
                           field="key_prefix")
    return prefix


def check_list_status(status: Any) -> str | None:
    if status not in LIST_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(LIST_STATUSES)}", field="status")
    return None if status == "ALL" else status


def check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIST_LIMIT}", field="limit")
    return limit


def check_origin(origin: Any, *, default: str | None = DEFAULT_ORIGIN) -> str | None:
    """One of ORIGINS; None gives `default` (a revision passes None: keep the stored one)."""
    if origin is None:
        return default
    if origin not in ORIGINS:
        raise InvalidInput(f"origin must be one of {', '.join(ORIGINS)}", field="origin")
    return origin


def check_label(value: Any, field: str, max_chars: int) -> str | None:
    """A short label a client names itself by (a model, a client name/version): sanitized,
    whitespace folded, bounded; None or blank is None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field)
    if len(value) > max_chars:
        raise TooLarge(f"{field} is longer than {max_chars} characters", field=field,
                       limit=max_chars)
    cleaned = _SPACE.sub(" ", _CONTROL.sub(" ", sanitize_text(value))).strip()
    if screen_text(cleaned):
        # Returned bare beside every memory: a label is refused rather than quarantined.
        raise InvalidInput(f"{field} looks like instructions, not a name", field=field)
    return cleaned or None


def check_derived_from(refs: Any) -> list[dict[str, str]] | None:
    """[{"type": memory|session|handoff|artifact, "id": UUID}], de-duplicated, at most
    MAX_DERIVED_FROM; None when not given. A bare id string names a memory."""
    if refs is None:
        return None
    if not isinstance(refs, list):
        raise InvalidInput("derived_from must be a list", field="derived_from")
    if len(refs) > MAX_DERIVED_FROM:
        raise TooLarge(f"derived_from names at most {MAX_DERIVED_FROM} records",
                       field="derived_from", limit=MAX_DERIVED_FROM)
    out: list[dict[str, str]] = []
    for ref in refs:
        if isinstance(ref, str):
            ref = {"type": "memory", "id": ref}
        if not isinstance(ref, dict) or set(ref) - {"type", "id"} \
                or ref.get("type") not in SOURCE_TYPES:
            raise InvalidInput(
                "each derived_from entry is {\"type\": memory|session|handoff|artifact, "
                "\"id\": UUID} (or a memory id)", field="derived_from")
        entry = {"type": ref["type"], "id": str(parse_id(ref.get("id"), "derived_from"))}
        if entry not in out:
            out.append(entry)
    return out
