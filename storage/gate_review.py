"""What tier 2 of the intent gate shows its model, bounded (GateBackend.gate_review_material;
docs/intent-gate.md, Tier 2).

The change is described by the write's own arguments, the caller's raw text: sanitized and cut
here, since a preview is answered before the write validates its content. The memories come
from the database (already sanitized when written) and are cut too, so one prompt is at most
about MEMORIES_MAX x CONTENT_CHARS + CHANGE_CHARS characters whatever the namespace holds.
"""

from __future__ import annotations

from typing import Any

from .sanitize import sanitize_text

MEMORIES_MAX = 30     # retired, dependent and related memories together
RELATED_MAX = 10      # of them, found by the retrieval guard for the change's text
CONTENT_CHARS = 1500  # one memory's text
CHANGE_CHARS = 4000   # the new memory's content, or a forget's reason
TITLE_CHARS = 200
TAGS_MAX = 32


def clip(value: Any, limit: int) -> str | None:
    """`value` sanitized and cut to `limit` characters; None for anything but a string."""
    if not isinstance(value, str):
        return None
    text = sanitize_text(value).strip()
    return text if len(text) <= limit else text[:limit] + " [...]"


def change_of(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The part of a write's arguments that says what it does."""
    if tool == "memory_forget":
        return {"forget": str(arguments.get("id")), "reason": clip(arguments.get("reason"),
                                                                   CHANGE_CHARS)}
    tags = arguments.get("tags")
    return {"supersedes": [str(t) for t in arguments.get("supersedes") or []],
            "new_memory": {
                "kind": clip(arguments.get("kind"), 32),
                "title": clip(arguments.get("title"), TITLE_CHARS),
                "content": clip(arguments.get("content"), CHANGE_CHARS),
                "tags": [t for t in (clip(tag, 64) for tag in tags[:TAGS_MAX]) if t]
                        if isinstance(tags, list) else []}}


def lookup_of(change: dict[str, Any], retired: list[dict[str, Any]]) -> str:
    """The text the related memories are looked up by: what the new memory says, or for a
    forget what the forgotten memory said and why it goes."""
    if "new_memory" in change:
        new = change["new_memory"]
        parts = [new["title"], new["content"]]
    else:
        parts = [r.get("content") for r in retired] + [change["reason"]]
    return " ".join(p for p in parts if p).strip()


def memory_of(row: dict[str, Any], role: str) -> dict[str, Any]:
    """One memory as the model reads it (raw text, cut; the prompt marks it as data)."""
    return {"id": str(row["id"]), "role": role, "kind": row["kind"],
            "title": clip(row.get("title"), TITLE_CHARS), "status": row["status"],
            "content": clip(row.get("content"), CONTENT_CHARS)}
