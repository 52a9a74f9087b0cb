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
from typing import Any

from ..errors import InvalidInput, TooLarge
from . import memory_input as mi
from .claims import check_claim
from .memory_dicts import effective_status
from .profiles import check_profile
from .sanitize import sanitize_text, screen
from .transfer_format import DAMAGED, Remap
from .transfer_values import (
    PRINTABLE,
    bool_field,
    choice_field,
    get_field,
    id_str,
    int_field,
    label_field,
    list_field,
    object_field,
    time_field,
    ts,
    uuid_field,
)
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
RETIRED = ("SUPERSEDED", "DELETED")
LINEAGE_MAX = 8000
MEDIA_TYPE_MAX = 200
_REASON = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,63}$")


def _reasons(rec: dict[str, Any], *texts: str | None) -> tuple[bool, list[str]]:
    """The file's quarantine, with whatever the screen finds now added to it."""
    flagged = bool_field(rec, "quarantined")
    reasons = list_field(rec, "quarantine_reasons")
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
    return {"record": "profile", "profile": check_profile(get_field(rec, "profile")),
            "version": int_field(rec, "version", 1), "created_at": time_field(rec, "created_at"),
            "updated_at": time_field(rec, "updated_at"),
            "updated_by": label_field(rec, "updated_by")}


# --- memories -----------------------------------------------------------------------------
def memory_record(row: dict[str, Any], revisions: list[dict[str, Any]],
                  corroborations: list[dict[str, Any]],
                  verifications: list[dict[str, Any]] | None = None,
                  claim: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "record": "memory", "id": str(row["id"]), "kind": row["kind"], "key": row["key"],
        "metadata": row["metadata"], "status": effective_status(row),
        "superseded_by": id_str(row["superseded_by"]),
        "current_revision": row["current_revision"], "author_client": row["author_client"],
        "quarantined": row["quarantined"], "deleted_reason": row["deleted_reason"],
        "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
        "retired_at": ts(row["retired_at"]),
        "expires_at": ts(row["expires_at"]), "lineage": row["lineage"],
        "origin": row["origin"], "model": row["model"], "client_info": row["client_info"],
        "derived_from": list(row["derived_from"]),
        "claim": {k: v for k, v in claim.items() if k != "memory_id" and v is not None}
        if claim else None,
        "verifications": [{"revision": v["revision"], "verified_by": v["verified_by"],
                           "verified_at": ts(v["verified_at"])} for v in verifications or []],
        "revisions": [{
            "revision": r["revision"], "title": r["title"], "content": r["content"],
            "tags": list(r["tags"]),
            **({"questions": list(r["questions"])} if r.get("questions") else {}),
            "author_client": r["author_client"],
            "created_at": ts(r["created_at"]),
        } for r in revisions],
        "corroborations": [{"author_client": c["author_client"],
                            "created_at": ts(c["created_at"])} for c in corroborations],
    }


def check_memory(rec: dict[str, Any], remap: Remap, max_chars: int) -> dict[str, Any]:
    current = int_field(rec, "current_revision", 1)
    revisions: list[dict[str, Any]] = []
    for number, raw in enumerate(list_field(rec, "revisions"), start=1):
        raw = object_field(raw, "revisions")
        if int_field(raw, "revision", 1) != number:
            raise InvalidInput("revisions must be numbered 1, 2, ... in order",
                               remedy=DAMAGED, field="revisions")
        revisions.append({
            "revision": number, "title": mi.check_title(get_field(raw, "title")),
            "content": mi.check_content(get_field(raw, "content"), max_chars),
            "tags": mi.check_tags(get_field(raw, "tags")),
            # Absent from files written before questions existed, and when none (as exported).
            **({"questions": qs} if (qs := mi.check_questions(raw.get("questions"))) else {}),
            "author_client": label_field(raw, "author_client"),
            "created_at": time_field(raw, "created_at"),
        })
    if len(revisions) != current:
        raise InvalidInput("a memory holds every revision up to its current one",
                           remedy=DAMAGED, field="revisions")
    status = choice_field(rec, "status", MEMORY_STATUSES)
    superseded_by = uuid_field(rec, "superseded_by", nullable=True)
    if (status == "SUPERSEDED") != (superseded_by is not None):
        raise InvalidInput("superseded_by is set exactly when the memory is SUPERSEDED",
                           remedy=DAMAGED, field="superseded_by")
    retired_at = _retired_at(rec, status)
    metadata = mi.check_metadata(get_field(rec, "metadata"))
    reason = get_field(rec, "deleted_reason")
    lineage = get_field(rec, "lineage")
    if lineage is not None and (not isinstance(lineage, str) or len(lineage) > LINEAGE_MAX):
        raise InvalidInput(f"lineage must be text of at most {LINEAGE_MAX} characters",
                           remedy=DAMAGED, field="lineage")
    last = revisions[-1]
    found = screen(last["title"], last["content"], *last.get("questions", []),
                   *json_strings(metadata))
    return {
        "record": "memory", "id": remap.id(uuid_field(rec, "id")),
        "kind": mi.check_kind(get_field(rec, "kind")), "key": mi.check_key(get_field(rec, "key")),
        "metadata": metadata, "status": status,
        "superseded_by": remap.id(superseded_by) if superseded_by else None,
        "current_revision": current, "author_client": label_field(rec, "author_client"),
        "quarantined": bool_field(rec, "quarantined") or found.quarantined,
        "deleted_reason": mi.check_reason(reason) if reason is not None else None,
        "created_at": time_field(rec, "created_at"), "updated_at": time_field(rec, "updated_at"),
        **retired_at,
        "expires_at": time_field(rec, "expires_at", nullable=True),
        "lineage": sanitize_text(lineage) if lineage is not None else None,
        # A file written before provenance existed says nothing of it: the memory was imported.
        "origin": mi.check_origin(get_field(rec, "origin"), default="imported"),
        "model": mi.check_label(get_field(rec, "model"), "model", mi.MAX_MODEL),
        "client_info": mi.check_label(get_field(rec, "client_info"), "client_info",
                                      mi.MAX_CLIENT_INFO),
        "derived_from": [{**d, "id": remap.source(d["type"], d["id"])}
                         for d in mi.check_derived_from(get_field(rec, "derived_from")) or []],
        "claim": check_claim(rec.get("claim")),  # files written before claims hold none
        "verifications": [{
            "revision": int_field(object_field(v, "verifications"), "revision", 1),
            "verified_by": label_field(v, "verified_by"),
            "verified_at": time_field(v, "verified_at"),
        } for v in list_field(rec, "verifications")],
        "revisions": revisions,
        "corroborations": [{
            "author_client": label_field(object_field(c, "corroborations"), "author_client"),
            "created_at": time_field(c, "created_at"),
        } for c in list_field(rec, "corroborations")],
    }


def _retired_at(rec: dict[str, Any], status: str) -> dict[str, Any]:
    """{"retired_at": ...} when the file says when the memory was superseded or forgotten
    (migration 0045), which it does exactly for those; {} for a file written before it."""
    if "retired_at" not in rec:
        return {}
    retired_at = time_field(rec, "retired_at", nullable=True)
    if (status in RETIRED) != (retired_at is not None) or (
            retired_at is not None and retired_at < str(time_field(rec, "created_at"))):
        raise InvalidInput("retired_at is set, not before created_at, exactly when the memory "
                           "is SUPERSEDED or DELETED", remedy=DAMAGED, field="retired_at")
    return {"retired_at": retired_at}


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
    title = text_field(get_field(rec, "title"), "title", max_chars=TITLE_MAX)
    body = text_field(get_field(rec, "body"), "body", max_chars=BODY_MAX)
    steps = text_list(get_field(rec, "next_steps"), "next_steps", max_items=LIST_ITEMS_MAX,
                      max_chars=STEP_MAX)
    refs = text_list(get_field(rec, "refs"), "refs", max_items=LIST_ITEMS_MAX, max_chars=REF_MAX)
    surface = get_field(rec, "for_surface")
    if surface is not None and (not isinstance(surface, str) or not SURFACE_RE.fullmatch(surface)):
        raise InvalidInput("for_surface must be a surface name", remedy=DAMAGED,
                           field="for_surface")
    status = choice_field(rec, "status", ("open", "taken"))
    taken_by = label_field(rec, "taken_by", nullable=True)
    taken_at = time_field(rec, "taken_at", nullable=True)
    if (status == "taken") != (taken_by is not None and taken_at is not None) or (
            status == "open" and (taken_by is not None or taken_at is not None)):
        raise InvalidInput("taken_by and taken_at are set exactly when the handoff is taken",
                           remedy=DAMAGED, field="status")
    quarantined, reasons = _reasons(rec, title, body, *steps, *refs)
    return {
        "record": "handoff", "id": remap.id(uuid_field(rec, "id")), "title": title, "body": body,
        "next_steps": steps, "refs": [remap.ref(r) for r in refs], "for_surface": surface,
        "author_client": label_field(rec, "author_client"), "status": status,
        "taken_by": taken_by, "taken_at": taken_at, "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": time_field(rec, "created_at"),
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
    title = text_field(get_field(rec, "title"), "title", max_chars=TITLE_MAX)
    status = choice_field(rec, "status", ("open", "closed"))
    closed_at = time_field(rec, "closed_at", nullable=True)
    if (status == "closed") != (closed_at is not None):
        raise InvalidInput("closed_at is set exactly when the session is closed",
                           remedy=DAMAGED, field="closed_at")
    quarantined, reasons = _reasons(rec, title)
    return {
        "record": "session", "id": remap.id(uuid_field(rec, "id")), "title": title,
        "author_client": label_field(rec, "author_client"), "status": status,
        "next_seq": int_field(rec, "next_seq", 0), "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": time_field(rec, "created_at"),
        "updated_at": time_field(rec, "updated_at"), "closed_at": closed_at,
        "closed_by": label_field(rec, "closed_by", nullable=True),
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
    kind = get_field(rec, "type")
    if not isinstance(kind, str) or not EVENT_TYPE_RE.fullmatch(kind):
        raise InvalidInput("type is not an event type", remedy=DAMAGED, field="type")
    payload = sanitize_json(get_field(rec, "payload"))
    encoded = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if len(encoded.encode("utf-8")) > PAYLOAD_MAX_BYTES:
        raise TooLarge(f"payload is larger than {PAYLOAD_MAX_BYTES} bytes of JSON",
                       field="payload", max_bytes=PAYLOAD_MAX_BYTES)
    digest = get_field(rec, "request_hash")
    if not isinstance(digest, str) or not SHA256_RE.fullmatch(digest):
        raise InvalidInput("request_hash must be 64 hex characters", remedy=DAMAGED,
                           field="request_hash")
    quarantined, reasons = _reasons(rec, *json_strings(payload))
    return {
        "record": "session_event", "session_id": remap.id(uuid_field(rec, "session_id")),
        "seq": int_field(rec, "seq", 1),
        "event_id": opt_key(get_field(rec, "event_id"), "event_id", EVENT_ID_MAX),
        "type": kind, "payload": payload, "request_hash": digest,
        "author_client": label_field(rec, "author_client"), "quarantined": quarantined,
        "quarantine_reasons": reasons, "created_at": time_field(rec, "created_at"),
    }


# --- artifacts ------------------------------------------------------------------------------
def artifact_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "record": "artifact", "id": str(row["id"]), "sha256": bytes(row["sha256"]).hex(),
        "name": row["name"], "media_type": row["media_type"], "size": row["size"],
        "author_client": row["author_client"], "created_at": ts(row["created_at"]),
    }


def check_artifact(rec: dict[str, Any], remap: Remap) -> dict[str, Any]:
    media_type = get_field(rec, "media_type")
    if not isinstance(media_type, str) or not 3 <= len(media_type) <= MEDIA_TYPE_MAX \
            or not PRINTABLE.fullmatch(media_type):
        raise InvalidInput("media_type is not a media type", remedy=DAMAGED, field="media_type")
    return {
        "record": "artifact", "id": remap.id(uuid_field(rec, "id")), "sha256": check_sha(rec),
        "name": text_field(get_field(rec, "name"), "name", max_chars=ARTIFACT_NAME_MAX),
        "media_type": media_type, "size": int_field(rec, "size", 0),
        "author_client": label_field(rec, "author_client"),
        "created_at": time_field(rec, "created_at"),
    }


def check_sha(rec: dict[str, Any]) -> str:
    value = get_field(rec, "sha256")
    if not isinstance(value, str) or not SHA256_RE.fullmatch(value):
        raise InvalidInput("sha256 must be 64 lower-case hex characters", remedy=DAMAGED,
                           field="sha256")
    return value


def chunk_bytes(rec: dict[str, Any]) -> bytes:
    data = get_field(rec, "data")
    try:
        if not isinstance(data, str):
            raise ValueError(data)
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput("a blob chunk's data is not base64", remedy=DAMAGED,
                           field="data") from None
