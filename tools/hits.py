"""What a search hit costs the model that reads it: the same information as the memory, with
nothing a reader can infer left in (nulls, defaults, the namespace it asked for, ACTIVE) and
the text a writer controls (title, content, metadata) in ONE untrusted-data block instead of
one per field. Every answer of memory_search, recall and intent_open is read on every turn
that follows it (docs/retrieval.md, What a hit costs)."""

from __future__ import annotations

import json
from typing import Any

from ..storage.sanitize import unwrap_all, unwrap_untrusted, wrap_untrusted

DEFAULT_ORIGIN = "agent_inferred"


def text_block(memory: dict[str, Any]) -> str | None:
    """Title, content and metadata of a memory (as memory_dict wraps them), as one block."""
    parts = [unwrap_untrusted(memory.get("title")), unwrap_untrusted(memory.get("content"))]
    metadata = memory.get("metadata")
    if metadata:
        parts.append("metadata: " + json.dumps(unwrap_all(metadata), ensure_ascii=False,
                                               separators=(",", ":")))
    return wrap_untrusted("\n".join(p for p in parts if p))


def hit(memory: dict[str, Any], match: str | None = None) -> dict[str, Any]:
    """A memory_dict as a compact hit: id, kind, revision, text, then only what it has."""
    out: dict[str, Any] = {"id": memory["id"], "kind": memory["kind"],
                           "revision": memory["revision"], "text": text_block(memory)}
    for field in ("tags", "key", "derived_from"):
        if memory.get(field):
            out[field] = memory[field]
    out["by"] = memory["author_client"]
    out["updated_at"] = memory["updated_at"]
    if memory.get("expires_at"):
        out["expires_at"] = memory["expires_at"]
    if memory.get("origin") and memory["origin"] != DEFAULT_ORIGIN:
        out["origin"] = memory["origin"]
    for field in ("model", "claim"):
        if memory.get(field):
            out[field] = memory[field]
    if memory.get("needs_reverification"):
        out["needs_reverification"] = True
    if memory.get("quarantined"):
        out["quarantined"] = True
    if memory.get("current_now") is False:
        out["current_now"] = False  # read as of a past time, and changed since
    if match is not None:
        out["match"] = match
    return out


def found_by(why: dict[str, Any]) -> str:
    """Which legs found a result: "words", "meaning" or "words+meaning"."""
    legs = [name for name, key in (("words", "lexical_rank"), ("meaning", "semantic_rank"))
            if why.get(key) is not None]
    return "+".join(legs) or "meaning"


def search_answer(found: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """memory_search's and recall's answer: the hits, each marked by the retrieval guard
    (strong, weak or none) and by the legs that found it; `as_of` for a past read,
    `degraded` only when true."""
    results = [{**hit(r["memory"], r["match"]["level"]), "found_by": found_by(r["why"])}
               for r in found["results"]]
    out: dict[str, Any] = {"results": results, **extra}
    if found.get("as_of"):
        out["as_of"] = found["as_of"]
    if found.get("degraded"):
        out["degraded"] = True
    return out
