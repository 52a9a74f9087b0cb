"""The records of an export file (storage/transfer_format.py): made from database rows on
export, and checked on import.

A file is data from elsewhere, so an import checks every record as the write path checks a
tool call: the same bounds, the same sanitizing of every text a model will read, and the same
screen for instruction-shaped text. A record's quarantine is kept and never lifted: a memory,
handoff, session or event the screen flags now is quarantined even if the file says it was
not. Data memhub wrote passes unchanged, so a record checked on import equals the record an
export of the imported row makes, which is how a second import recognises what it wrote.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from ..errors import InvalidInput, TooLarge
from . import memory_input as mi
from .memory_dicts import effective_status
from .profiles import check_profile
from .sanitize import sanitize_text, screen
from .transfer_format import DAMAGED, Remap
from .work_input import (
    ARTIFACT_NAME_MAX,
    BODY_MAX,
    EVENT_ID_MAX,
    EVENT_TYPE_RE,
    LIST_ITEMS_MAX,
    PAYLOAD_MAX_BYTES,
    REF_MAX,
    SHA256_RE,
    STEP_MAX,
    SURFACE_RE,
    TITLE_MAX,
    json_strings,
    opt_key,
    sanitize_json,
    text_field,
    text_list,
)

MEMORY_STATUSES = ("ACTIVE", "SUPERSEDED", "DELETED", "EXPIRED")
LINEAGE_MAX = 8000
AUTHOR_MAX = 200
MEDIA_TYPE_MAX = 200
_PRINTABLE = re.compile(r"^[^\x00-\x1f\x7f]+$")
_REASON = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,63}$")


# --- values -------------------------------------------------------------------------------
def ts(value: datetime | None) -> str | None:
    """A database time as the file writes it: UTC, microseconds always shown."""
    return value.astimezone(UTC).isoformat(timespec="microseconds") if value else None


def id_str(value: UUID | str | None) -> str | None:
    return str(value) if value is not None else None


def _get(rec: dict[str, Any], key: str) -> Any:
    if key not in rec:
        raise InvalidInput(f"the record has no {key!r}", remedy=DAMAGED, field=key)
    return rec[key]


def _time(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    value = _get(rec, key)
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


def _uuid(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    value = _get(rec, key)
    if value is None and nullable:
        return None
    try:
        return str(UUID(value))
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput(f"{key} is not a UUID", remedy=DAMAGED, field=key) from None


def _int(rec: dict[str, Any], key: str, minimum: int) -> int:
    value = _get(rec, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{key} must be an integer >= {minimum}", remedy=DAMAGED, field=key)
    return value


def _bool(rec: dict[str, Any], key: str) -> bool:
    value = _get(rec, key)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key} must be true or false", remedy=DAMAGED, field=key)
    return value


def _choice(rec: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = _get(rec, key)
    if value not in allowed:
        raise InvalidInput(f"{key} must be one of {', '.join(allowed)}", remedy=DAMAGED,
                           field=key)
    return value


def _label(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    """Who wrote something (a surface, or an operator label): short, printable."""
    value = _get(rec, key)
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= AUTHOR_MAX \
            or not _PRINTABLE.fullmatch(value):
        raise InvalidInput(f"{key} must be 1-{AUTHOR_MAX} printable characters",
                           remedy=DAMAGED, field=key)
    return value


def _list(rec: dict[str, Any], key: str) -> list[Any]:
    value = _get(rec, key)
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be a list", remedy=DAMAGED, field=key)
    return value


def _object(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{key} must be an object", remedy=DAMAGED, field=key)
    return value


def _reasons(rec: dict[str, Any], *texts: str | None) -> tuple[bool, list[str]]:
    """The file's quarantine, with whatever the screen finds now added to it."""
    flagged = _bool(rec, "quarantined")
    reasons = _list(rec, "quarantine_reasons")
    if not all(isinstance(r, str) and _REASON.fullmatch(r) for r in reasons):
        raise InvalidInput("quarantine_reasons must be short names", remedy=DAMAGED,
                           field="quarantine_reasons")
    found = screen(*texts)
    reasons += [r for r in found.reasons if r not in reasons]
    return flagged or found.quarantined, reasons


# --- the namespace's profile ----------------------------------------------------------------
def profile_record(row: dict[str, Any]) -> dict[str, Any]:
    return {"record": "profile", "profile": row["profile"], "version": row["version"],
            "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
            "updated_by": row["updated_by"]}


def check_profile_record(rec: dict[str, Any]) -> dict[str, Any]:
    """Checked as namespace_init checks a profile: bounds, keys and the injection screen."""
    return {"record": "profile", "profile": check_profile(_get(rec, "profile")),
            "version": _int(rec, "version", 1), "created_at": _time(rec, "created_at"),
            "updated_at": _time(rec, "updated_at"), "updated_by": _label(rec, "updated_by")}


# --- memories -----------------------------------------------------------------------------
def memory_record(row: dict[str, Any], revisions: list[dict[str, Any]],
                  corroborations: list[dict[str, Any]],
                  verifications: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "record": "memory", "id": str(row["id"]), "kind": row["kind"], "key": row["key"],
        "metadata": row["metadata"], "status": effective_status(row),
        "superseded_by": id_str(row["superseded_by"]),
        "current_revision": row["current_revision"], "author_client": row["author_client"],
        "quarantined": row["quarantined"], "deleted_reason": row["deleted_reason"],
        "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
        "expires_at": ts(row["expires_at"]), "lineage": row["lineage"],
        "origin": row["origin"], "model": row["model"], "client_info": row["client_info"],
        "derived_from": list(row["derived_from"]),
        "verifications": [{"revision": v["revision"], "verified_by": v["verified_by"],
                           "verified_at": ts(v["verified_at"])} for v in verifications or []],
        "revisions": [{
            "revision": r["revision"], "title": r["title"], "content": r["content"],
            "tags": list(r["tags"]), "author_client": r["author_client"],
            "created_at": ts(r["created_at"]),
        } for r in revisions],
        "corroborations": [{"author_client": c["author_client"],
                            "created_at": ts(c["created_at"])} for c in corroborations],
    }


def check_memory(rec: dict[str, Any], remap: Remap, max_chars: int) -> dict[str, Any]:
    current = _int(rec, "current_revision", 1)
    revisions = []
    for number, raw in enumerate(_list(rec, "revisions"), start=1):
        raw = _object(raw, "revisions")
        if _int(raw, "revision", 1) != number:
            raise InvalidInput("revisions must be numbered 1, 2, ... in order",
                               remedy=DAMAGED, field="revisions")
        revisions.append({
            "revision": number, "title": mi.check_title(_get(raw, "title")),
            "content": mi.check_content(_get(raw, "content"), max_chars),
            "tags": mi.check_tags(_get(raw, "tags")),
            "author_client": _label(raw, "author_client"),
            "created_at": _time(raw, "created_at"),
        })
    if len(revisions) != current:
        raise InvalidInput("a memory holds every revision up to its current one",
                           remedy=DAMAGED, field="revisions")
    status = _choice(rec, "status", MEMORY_STATUSES)
    superseded_by = _uuid(rec, "superseded_by", nullable=True)
    if (status == "SUPERSEDED") != (superseded_by is not None):
        raise InvalidInput("superseded_by is set exactly when the memory is SUPERSEDED",
                           remedy=DAMAGED, field="superseded_by")
    metadata = mi.check_metadata(_get(rec, "metadata"))
    reason = _get(rec, "deleted_reason")
    lineage = _get(rec, "lineage")
    if lineage is not None and (not isinstance(lineage, str) or len(lineage) > LINEAGE_MAX):
        raise InvalidInput(f"lineage must be text of at most {LINEAGE_MAX} characters",
                           remedy=DAMAGED, field="lineage")
    last = revisions[-1]
    found = screen(last["title"], last["content"], *json_strings(metadata))
    return {
        "record": "memory", "id": remap.id(_uuid(rec, "id")),
        "kind": mi.check_kind(_get(rec, "kind")), "key": mi.check_key(_get(rec, "key")),
        "metadata": metadata, "status": status,
        "superseded_by": remap.id(superseded_by) if superseded_by else None,
        "current_revision": current, "author_client": _label(rec, "author_client"),
        "quarantined": _bool(rec, "quarantined") or found.quarantined,
        "deleted_reason": mi.check_reason(reason) if reason is not None else None,
        "created_at": _time(rec, "created_at"), "updated_at": _time(rec, "updated_at"),
        "expires_at": _time(rec, "expires_at", nullable=True),
        "lineage": sanitize_text(lineage) if lineage is not None else None,
        # A file written before provenance existed says nothing of it: the memory was imported.
        "origin": mi.check_origin(_get(rec, "origin"), default="imported"),
        "model": mi.check_label(_get(rec, "model"), "model", mi.MAX_MODEL),
        "client_info": mi.check_label(_get(rec, "client_info"), "client_info",
                                      mi.MAX_CLIENT_INFO),
        "derived_from": [{**d, "id": remap.id(d["id"])} if d["type"] == "memory" else d
                         for d in mi.check_derived_from(_get(rec, "derived_from")) or []],
        "verifications": [{
            "revision": _int(_object(v, "verifications"), "revision", 1),
            "verified_by": _label(v, "verified_by"),
            "verified_at": _time(v, "verified_at"),
        } for v in _list(rec, "verifications")],
        "revisions": revisions,
        "corroborations": [{
            "author_client": _label(_object(c, "corroborations"), "author_client"),
            "created_at": _time(c, "created_at"),
        } for c in _list(rec, "corroborations")],
    }


# --- handoffs, sessions, events -------------------------------------------------------------
def handoff_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "handoff", "id": str(row["id"]), "title": row["title"], "body": row["body"],
        "next_steps": list(row["next_steps"]), "refs": list(row["refs"]),
        "for_surface": row["for_surface"], "author_client": row["author_client"],
        "status": row["status"], "taken_by": row["taken_by"], "taken_at": ts(row["taken_at"]),
        "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
        "created_at": ts(row["created_at"]),
    }


def check_handoff(rec: dict[str, Any], remap: Remap) -> dict[str, Any]:
    title = text_field(_get(rec, "title"), "title", max_chars=TITLE_MAX)
    body = text_field(_get(rec, "body"), "body", max_chars=BODY_MAX)
    steps = text_list(_get(rec, "next_steps"), "next_steps", max_items=LIST_ITEMS_MAX,
                      max_chars=STEP_MAX)
    refs = text_list(_get(rec, "refs"), "refs", max_items=LIST_ITEMS_MAX, max_chars=REF_MAX)
    surface = _get(rec, "for_surface")
    if surface is not None and (not isinstance(surface, str) or not SURFACE_RE.fullmatch(surface)):
        raise InvalidInput("for_surface must be a surface name", remedy=DAMAGED,
                           field="for_surface")
    status = _choice(rec, "status", ("open", "taken"))
    taken_by = _label(rec, "taken_by", nullable=True)
    taken_at = _time(rec, "taken_at", nullable=True)
    if (status == "taken") != (taken_by is not None and taken_at is not None) or (
            status == "open" and (taken_by is not None or taken_at is not None)):
        raise InvalidInput("taken_by and taken_at are set exactly when the handoff is taken",
                           remedy=DAMAGED, field="status")
    quarantined, reasons = _reasons(rec, title, body, *steps, *refs)
    return {
        "record": "handoff", "id": remap.id(_uuid(rec, "id")), "title": title, "body": body,
        "next_steps": steps, "refs": [remap.ref(r) for r in refs], "for_surface": surface,
        "author_client": _label(rec, "author_client"), "status": status,
        "taken_by": taken_by, "taken_at": taken_at, "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": _time(rec, "created_at"),
    }


def session_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "session", "id": str(row["id"]), "title": row["title"],
        "author_client": row["author_client"], "status": row["status"],
        "next_seq": row["next_seq"], "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
        "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
        "closed_at": ts(row["closed_at"]), "closed_by": row["closed_by"],
    }


def check_session(rec: dict[str, Any], remap: Remap) -> dict[str, Any]:
    title = text_field(_get(rec, "title"), "title", max_chars=TITLE_MAX)
    status = _choice(rec, "status", ("open", "closed"))
    closed_at = _time(rec, "closed_at", nullable=True)
    if (status == "closed") != (closed_at is not None):
        raise InvalidInput("closed_at is set exactly when the session is closed",
                           remedy=DAMAGED, field="closed_at")
    quarantined, reasons = _reasons(rec, title)
    return {
        "record": "session", "id": remap.id(_uuid(rec, "id")), "title": title,
        "author_client": _label(rec, "author_client"), "status": status,
        "next_seq": _int(rec, "next_seq", 0), "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": _time(rec, "created_at"),
        "updated_at": _time(rec, "updated_at"), "closed_at": closed_at,
        "closed_by": _label(rec, "closed_by", nullable=True),
    }


def event_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "session_event", "session_id": str(row["session_id"]), "seq": row["seq"],
        "event_id": row["event_id"], "type": row["type"], "payload": row["payload"],
        "request_hash": bytes(row["request_hash"]).hex(),
        "author_client": row["author_client"], "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
        "created_at": ts(row["created_at"]),
    }


def check_event(rec: dict[str, Any], remap: Remap) -> dict[str, Any]:
    kind = _get(rec, "type")
    if not isinstance(kind, str) or not EVENT_TYPE_RE.fullmatch(kind):
        raise InvalidInput("type is not an event type", remedy=DAMAGED, field="type")
    payload = sanitize_json(_get(rec, "payload"))
    encoded = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if len(encoded.encode("utf-8")) > PAYLOAD_MAX_BYTES:
        raise TooLarge(f"payload is larger than {PAYLOAD_MAX_BYTES} bytes of JSON",
                       field="payload", max_bytes=PAYLOAD_MAX_BYTES)
    digest = _get(rec, "request_hash")
    if not isinstance(digest, str) or not SHA256_RE.fullmatch(digest):
        raise InvalidInput("request_hash must be 64 hex characters", remedy=DAMAGED,
                           field="request_hash")
    quarantined, reasons = _reasons(rec, *json_strings(payload))
    return {
        "record": "session_event", "session_id": remap.id(_uuid(rec, "session_id")),
        "seq": _int(rec, "seq", 1),
        "event_id": opt_key(_get(rec, "event_id"), "event_id", EVENT_ID_MAX),
        "type": kind, "payload": payload, "request_hash": digest,
        "author_client": _label(rec, "author_client"), "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": _time(rec, "created_at"),
    }


# --- artifacts ------------------------------------------------------------------------------
def artifact_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "artifact", "id": str(row["id"]), "sha256": bytes(row["sha256"]).hex(),
        "name": row["name"], "media_type": row["media_type"], "size": row["size"],
        "author_client": row["author_client"], "created_at": ts(row["created_at"]),
    }


def check_artifact(rec: dict[str, Any], remap: Remap) -> dict[str, Any]:
    media_type = _get(rec, "media_type")
    if not isinstance(media_type, str) or not 3 <= len(media_type) <= MEDIA_TYPE_MAX \
            or not _PRINTABLE.fullmatch(media_type):
        raise InvalidInput("media_type is not a media type", remedy=DAMAGED, field="media_type")
    return {
        "record": "artifact", "id": remap.id(_uuid(rec, "id")), "sha256": check_sha(rec),
        "name": text_field(_get(rec, "name"), "name", max_chars=ARTIFACT_NAME_MAX),
        "media_type": media_type, "size": _int(rec, "size", 0),
        "author_client": _label(rec, "author_client"), "created_at": _time(rec, "created_at"),
    }


def check_sha(rec: dict[str, Any]) -> str:
    value = _get(rec, "sha256")
    if not isinstance(value, str) or not SHA256_RE.fullmatch(value):
        raise InvalidInput("sha256 must be 64 lower-case hex characters", remedy=DAMAGED,
                           field="sha256")
    return value


def chunk_bytes(rec: dict[str, Any]) -> bytes:
    data = _get(rec, "data")
    try:
        if not isinstance(data, str):
            raise ValueError(data)
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("a blob chunk's data is not base64", remedy=DAMAGED,
                           field="data") from None
