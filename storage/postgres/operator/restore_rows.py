"""Checked export records (storage/transfer_records.py) as the parameters of the import's
inserts (storage/postgres/operator/restore.py, transfer.sql): ids as UUIDs, times as datetimes, JSON
as Jsonb, hex as bytes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from ... import memory_input as mi
from ...transfer_records import RETIRED
from .transfer import as_uuid


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def retired_at_of(record: dict[str, Any]) -> str | None:
    """When a checked memory record was retired: the file's time, or, for a file written
    before retired_at (0045), its updated_at (not earlier than the retirement; the backfill of
    0045 without a better record)."""
    if "retired_at" in record:
        return record["retired_at"]
    return record["updated_at"] if record["status"] in RETIRED else None


def memory_rows(r: dict[str, Any], namespace: str) -> tuple[
        dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]],
        list[dict[str, Any]]]:
    """A checked memory record as insert parameters: (memory, revisions, corroborations,
    verifications, claims)."""
    last = r["revisions"][-1]
    mid = uuid.UUID(r["id"])
    memory = {
        "id": mid, "namespace": namespace, "kind": r["kind"], "title": last["title"],
        "content": last["content"], "tags": last["tags"], "questions": last.get("questions", []),
        "key": r["key"],
        "metadata": Jsonb(r["metadata"]) if r["metadata"] is not None else None,
        "status": r["status"], "superseded_by": as_uuid(r["superseded_by"]),
        "current_revision": r["current_revision"],
        "content_hash": mi.content_hash(last["content"]), "author_client": r["author_client"],
        "quarantined": r["quarantined"], "deleted_reason": r["deleted_reason"],
        "created_at": _time(r["created_at"]), "updated_at": _time(r["updated_at"]),
        "retired_at": _time(retired_at_of(r)),
        "expires_at": _time(r["expires_at"]), "lineage": r["lineage"],
        "origin": r["origin"], "model": r["model"], "client_info": r["client_info"],
        "derived_from": Jsonb(r["derived_from"]),
    }
    revisions = [{
        "memory_id": mid, "namespace": namespace, "revision": v["revision"],
        "title": v["title"], "content": v["content"], "tags": v["tags"],
        "questions": v.get("questions", []), "author_client": v["author_client"],
        "is_current": v["revision"] == r["current_revision"],
        "created_at": _time(v["created_at"]),
    } for v in r["revisions"]]
    corroborations = [{"namespace": namespace, "memory_id": mid,
                       "author_client": c["author_client"],
                       "created_at": _time(c["created_at"])} for c in r["corroborations"]]
    verifications = [{"namespace": namespace, "memory_id": mid, "revision": v["revision"],
                      "verified_by": v["verified_by"], "verified_at": _time(v["verified_at"])}
                     for v in r["verifications"]]
    claims = [{"namespace": namespace, "memory_id": mid, "pr": None, "branch": None,
               "sha": None, **r["claim"]}] if r.get("claim") else []
    return memory, revisions, corroborations, verifications, claims


def insert_row(r: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A handoff, session, event or artifact record as insert parameters."""
    out = {k: v for k, v in r.items() if k != "record"}
    out["namespace"] = namespace
    for key in ("id", "session_id"):
        if key in out:
            out[key] = uuid.UUID(out[key])
    for key in ("created_at", "updated_at", "closed_at", "taken_at"):
        if key in out:
            out[key] = _time(out[key])
    if "payload" in out:
        out["payload"] = Jsonb(out["payload"])
    for key in ("request_hash", "sha256"):
        if key in out:
            out[key] = bytes.fromhex(out[key])
    return out
