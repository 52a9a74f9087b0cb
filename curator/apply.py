"""`curate`: read a closed session and its similar memories, ask the model, apply its answer.

Deterministic once the answer is in: operations run in the model's order, each through the
same storage method a client's write uses (remember for ADD / MERGE / SUPERSEDE, revise for
UPDATE), so the namespace check, compare-and-set, dedup, injection screening, change feed and
RLS all apply. A session is curated once: when memories curated from it exist
(storage.curated_from_session), a re-run lists them ("already_curated") without asking the
model. Underneath, each operation carries the client_request_id `curate:<hash of namespace,
session, position>` through the idempotency layer, so two runs racing (or a retry of a run
whose answer was lost) replay the first one's writes, or are refused (IDEMPOTENCY_MISMATCH)
when the model answered differently at that position. A write path's refusal (CONFLICT,
NOT_FOUND, ...) skips that one operation; an operation the screens flag is dropped before any
write.

The intent gate holds here as everywhere: in a namespace with the gate on, `remember` refuses
a MERGE's or SUPERSEDE's retirement without a confirmation (CONFIRMATION_REQUIRED, nothing
written), and the operation is answered `needs_confirmation` for the caller to apply through
memory_remember, which previews it and asks for the confirmation. A run that anyone's session
events could steer retires nothing on its own there.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..config import Settings
from ..errors import (
    ConfirmationRequired,
    Conflict,
    IdempotencyMismatch,
    InvalidInput,
    MemhubError,
)
from ..storage.base import StorageBackend
from ..storage.claims import check_claim
from ..storage.principal import Principal
from ..storage.sanitize import screen_text, unwrap_all, wrap_untrusted
from . import operations as ops
from .client import AnthropicClient
from .prompt import SYSTEM, user_message
from .screen import sensitive

MAX_EVENTS = 1000
EVENTS_PAGE = 500
MAX_QUERIES = 8
QUERY_CHARS = 500
PER_QUERY = 5
MAX_SHOWN = 30


def request_id(namespace: str, session_id: str, index: int) -> str:
    digest = hashlib.sha256(f"{namespace}\n{session_id}\n{index}".encode()).hexdigest()
    return f"curate:{digest[:48]}"


async def _events(storage: StorageBackend, principal: Principal, namespace: str,
                  session_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    after = 0
    while len(events) < MAX_EVENTS:
        page = await storage.session_events(principal, namespace, session_id=session_id,
                                            after_seq=after, limit=EVENTS_PAGE)
        events += page["events"]
        if page["next_after_seq"] is None:
            break
        after = page["next_after_seq"]
    return events[:MAX_EVENTS]


def _queries(session: dict[str, Any], events: list[dict[str, Any]]) -> list[str]:
    texts = [unwrap_all(session.get("title")) or ""]
    for event in events:
        payload = unwrap_all(event["payload"])
        texts.append(payload if isinstance(payload, str)
                     else json.dumps(payload, ensure_ascii=False))
    chosen = sorted((t for t in texts if t.strip()), key=len, reverse=True)[:MAX_QUERIES]
    return [t[:QUERY_CHARS] for t in chosen]


async def _similar(storage: StorageBackend, principal: Principal, namespace: str,
                   queries: list[str]) -> list[dict[str, Any]]:
    shown: dict[str, dict[str, Any]] = {}
    for query in queries:
        found = await storage.search(principal, namespace, query, limit=PER_QUERY)
        for result in found["results"]:
            memory = result["memory"]
            if len(shown) < MAX_SHOWN and memory["status"] == "ACTIVE":
                shown.setdefault(memory["id"].lower(), memory)
    return list(shown.values())


def _claim(op: ops.Add) -> tuple[dict[str, Any] | None, str, str | None]:
    """(claim to pass, kind, note): a claim without repository provenance makes a NOTE."""
    if op.claim is None:
        return None, op.kind, None
    given = {k: v for k, v in op.claim.model_dump().items() if v is not None}
    try:
        return check_claim(given), op.kind, None
    except InvalidInput:
        return None, "NOTE", "claim without repository provenance (repo + pr, or repo + " \
                             "branch + sha): kept as a NOTE"


def _view(index: int, op: Any, rid: str) -> dict[str, Any]:
    data = op.model_dump(exclude_none=True)
    for name in ("content", "title", "why"):
        if name in data:
            data[name] = wrap_untrusted(data[name])
    return {"index": index, **data, "client_request_id": rid}


async def curate(storage: StorageBackend, settings: Settings, principal: Principal,
                 namespace: str, session_id: str, *, dry_run: bool) -> dict[str, Any]:
    """The tool's answer. Errors: NOT_FOUND (no such session), CONFLICT (session still open),
    INVALID_INPUT, FORBIDDEN; every failure of the model's side is an answer with zero
    operations and a reason."""
    client = AnthropicClient(settings)
    if not client.configured:
        return {"curator_enabled": False, "operations": []}
    session = (await storage.session_get(principal, namespace, session_id=session_id))["session"]
    if session["status"] != "closed":
        raise Conflict("the session is still open; only a closed session is curated",
                       remedy="Close it with session_close, then curate it.",
                       session_id=session["id"])
    earlier = await storage.curated_from_session(principal, namespace, session["id"])
    if earlier:
        # Curated once already: asking again would let a differently-worded answer add
        # to what the first run wrote. What it wrote is the answer.
        return {"curator_enabled": True, "session_id": session["id"], "dry_run": dry_run,
                "outcome": "already_curated", "operations": [], "curated_memories": earlier,
                "reason": "this session was curated before; its memories are listed"}
    events = await _events(storage, principal, namespace, session["id"])
    shown = await _similar(storage, principal, namespace, _queries(session, events))
    message, cut = user_message(session, events, shown)
    answer: dict[str, Any] = {
        "curator_enabled": True, "session_id": session["id"], "dry_run": dry_run,
        "model": client.model, "events_read": len(events), "events_truncated": cut,
        "memories_shown": len(shown), "operations": [], "reason": None,
    }
    reply = await client.force_tool(SYSTEM, message, ops.tool_definition())
    answer["usage"] = {k: v for k, v in reply.usage.items()
                       if k in ("input_tokens", "output_tokens") and isinstance(v, int)}
    if reply.tool_input is None:
        answer.update(outcome="rejected", reason=reply.reason,
                      retry_after_seconds=reply.retry_after)
        return answer
    plan, reason = ops.parse_plan(reply.tool_input, {m["id"].lower() for m in shown})
    if plan is None:
        answer.update(outcome="rejected", reason=reason)
        return answer
    revisions = {m["id"].lower(): m["revision"] for m in shown}
    results = []
    for index, op in enumerate(plan.operations):
        rid = request_id(namespace, session["id"], index)
        item = _view(index, op, rid)
        results.append(item)
        await _one(storage, settings, principal, namespace, session["id"], op, rid,
                   revisions, item, dry_run)
    answer.update(outcome="proposed" if dry_run else "applied", operations=results)
    return answer


async def _one(storage: StorageBackend, settings: Settings, principal: Principal,
               namespace: str, session_id: str, op: Any, rid: str,
               revisions: dict[str, int], item: dict[str, Any], dry_run: bool) -> None:
    """Screen one operation, then write it (unless dry_run); the verdict goes into `item`."""
    if isinstance(op, ops.Noop):
        item["status"] = "noop"
        return
    questions = list(getattr(op, "questions", []))
    texts = (op.content, op.title, *getattr(op, "tags", []), *questions)
    found = sensitive(*texts)
    if found:
        item.update(status="dropped", reason="secret or personal data: " + ", ".join(found))
        return
    injected = screen_text(*texts)
    if injected:
        item.update(status="dropped", reason="instruction-shaped text: " + ", ".join(injected))
        return
    claim, kind, note = (None, getattr(op, "kind", None), None)
    if isinstance(op, ops.Add):
        claim, kind, note = _claim(op)
        item["kind"] = kind
    if note:
        item["note"] = note
    if dry_run:
        item["status"] = "proposed"
        return
    source = [{"type": "session", "id": session_id}]
    common: dict[str, Any] = {"client_request_id": rid, "origin": "curated",
                              "model": settings.curator_model}
    try:
        if isinstance(op, ops.Update):
            written = await storage.revise(
                principal, namespace, op.id, revisions[op.id.lower()], content=op.content,
                title=op.title, derived_from=source, questions=questions or None, **common)
        else:
            replaced = ops.targets(op)
            written = await storage.remember(
                principal, namespace, content=op.content, kind=kind or "NOTE", title=op.title,
                tags=op.tags or None, supersedes=replaced or None, claim=claim,
                derived_from=source + [{"type": "memory", "id": i} for i in replaced],
                questions=questions or None, **common)
    except ConfirmationRequired:
        item.update(status="needs_confirmation", code="CONFIRMATION_REQUIRED",
                    reason="the intent gate is on: apply it with memory_remember (supersedes "
                           "= the ids above), which previews it and asks for a confirmation")
        return
    except IdempotencyMismatch:
        item.update(status="skipped", code="IDEMPOTENCY_MISMATCH",
                    reason="this session was curated before with a different operation here")
        return
    except MemhubError as exc:
        item.update(status="skipped", code=exc.code, reason=str(exc)[:300])
        return
    outcome = written.get("outcome")
    item.update(status="replayed" if outcome == "replayed" else "applied", outcome=outcome,
                memory_id=written["memory"]["id"])
