"""The one serializer from a `memories` row to the memory dict every tool returns.

Title, content, every string value of the metadata and the deletion reason were written by
some client and will be read by a model: they leave wrapped in untrusted-data markers
(`storage.sanitize.wrap_untrusted`; metadata through `work_input.wrap_json`, which leaves its
keys bare as session payloads do). Consumers that need the raw text call
`storage.sanitize.unwrap_untrusted` (`unwrap_all` for the metadata).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from .sanitize import wrap_untrusted
from .work_input import wrap_json


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def id_str(value: UUID | str | None) -> str | None:
    return str(value) if value is not None else None


def effective_status(row: dict[str, Any]) -> str:
    """EXPIRED for a memory past its expires_at that the sweep has not marked yet (the audit
    reads select `past_expiry`, by the database clock); the stored status otherwise."""
    return "EXPIRED" if row.get("past_expiry") else row["status"]


def memory_dict(row: dict[str, Any]) -> dict[str, Any]:
    """A JSON-able memory from a row of `memories` or `live_memories` (SELECT * or at least
    the columns read here; metadata, quarantined and deleted_reason may be left out)."""
    return {
        "id": str(row["id"]),
        "namespace": row["namespace"],
        "kind": row["kind"],
        "title": wrap_untrusted(row["title"]),
        "content": wrap_untrusted(row["content"]),
        "tags": list(row["tags"] or []),
        # What it answers (migration 0040); absent without questions, as before them.
        **({"questions": [wrap_untrusted(q) for q in row["questions"]]}
           if row.get("questions") else {}),
        "key": row["key"],
        "status": effective_status(row),
        "revision": row["current_revision"],
        "author_client": row["author_client"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "superseded_by": id_str(row["superseded_by"]),
        "expires_at": iso(row["expires_at"]),
        "metadata": wrap_json(row.get("metadata")),
        "quarantined": bool(row.get("quarantined", False)),
        "deleted_reason": wrap_untrusted(row.get("deleted_reason")),
        **provenance(row),
    }


def memory_now(row: dict[str, Any]) -> dict[str, Any]:
    """What a memory is now, as the details of a write that did not apply report it (a
    CONFLICT): from a row of `memories.current_revision_of` / `memories.now_of` (the memory
    with its current revision's author and time)."""
    now = {
        "id": str(row["id"]),
        "status": effective_status(row),
        "current_revision": row["current_revision"],
        "current_content": wrap_untrusted(row["content"]),
        "current_author": row["revision_author"],
        "current_at": iso(row["revision_at"]),
    }
    if row["superseded_by"] is not None:
        now["superseded_by"] = str(row["superseded_by"])
    return now


def provenance(row: dict[str, Any]) -> dict[str, Any]:
    """Where the memory came from and whether it is due for re-verification (migration 0029).
    `needs_reverification` is computed by the read (live_memories, or the audit reads); a row
    a write just returned is fresh by definition."""
    return {
        "origin": row.get("origin", "agent_inferred"),
        "model": row.get("model"),
        "client_info": row.get("client_info"),
        "derived_from": list(row.get("derived_from") or []),
        "needs_reverification": bool(row.get("needs_reverification", False))
        and effective_status(row) == "ACTIVE",
        # A claim about a repository with its latest verdict (migration 0032); absent
        # without one, so a memory without a claim reads as it did before claims existed.
        **({"claim": row["claim"]} if row.get("claim") else {}),
    }
