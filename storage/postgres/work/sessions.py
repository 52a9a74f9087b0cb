"""`SessionStore`: sessions and their append-only event logs (a mixin over `PgCore`).

Sequence numbers are assigned by the database: an append locks its session row, bumps the
session's `next_seq` with UPDATE ... RETURNING and inserts the event in the same transaction.
Appends to one session are therefore serialised and numbered 1..N without gaps (a rolled
back append rolls its bump back). `event_id` makes an append exactly-once: a replay returns
the original event. Without it an append is at-least-once from the client's point of view
(a client that lost the answer and retries may append twice) and the server never replays it.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg.types.json import Jsonb

from ....errors import Conflict, IdempotencyMismatch, InvalidInput, NotFound, TooLarge
from ...cursors import decode_cursor, keyset_page
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...sanitize import screen, wrap_untrusted
from ...work_input import (
    EVENT_ID_MAX,
    EVENT_TYPE_RE,
    EVENTS_LIMIT_MAX,
    LIST_LIMIT_MAX,
    PAYLOAD_MAX_BYTES,
    REQUEST_ID_MAX,
    TITLE_MAX,
    bounded_limit,
    hidden_if_quarantined,
    json_strings,
    opt_key,
    parse_uuid,
    sanitize_json,
    text_field,
    wrap_json,
)
from ..idempotency import IdempotentWrites, request_hash
from ..rows import Conn, many, one
from ..server_secrets import ServerSecrets

SESSION_STATUSES = ("open", "closed", "all")


def session_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "namespace": row["namespace"],
        "title": wrap_untrusted(row["title"]),
        "status": row["status"],
        "author_client": row["author_client"],
        "event_count": row["next_seq"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
        "closed_at": iso(row["closed_at"]),
        "closed_by": row["closed_by"],
        "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
    }


def event_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": str(row["session_id"]),
        "seq": row["seq"],
        "event_id": row["event_id"],
        "type": row["type"],
        "payload": wrap_json(row["payload"]),
        "author_client": row["author_client"],
        "created_at": iso(row["created_at"]),
        "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
    }


def _payload(value: Any) -> Any:
    try:
        encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("payload must be JSON (no NaN or Infinity)", field="payload") from None
    if len(encoded.encode("utf-8")) > PAYLOAD_MAX_BYTES:
        raise TooLarge(f"payload is larger than {PAYLOAD_MAX_BYTES} bytes of JSON",
                       field="payload", max_bytes=PAYLOAD_MAX_BYTES)
    return sanitize_json(value)


class SessionStore(ServerSecrets, IdempotentWrites):
    async def session_create(
        self, principal: Principal, namespace: str, *, title: str,
        client_request_id: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        raw = {"title": title}
        title = text_field(title, "title", max_chars=TITLE_MAX)
        request_id = opt_key(client_request_id, "client_request_id", REQUEST_ID_MAX)
        screening = screen(title)

        async def body(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "sessions.insert", {
                "namespace": namespace, "title": title, "author": principal.surface,
                "quarantined": screening.quarantined, "reasons": list(screening.reasons),
            })
            assert row is not None
            return {"outcome": "created", "session": session_dict(row),
                    "quarantine": screening.as_dict()}

        return await self._idempotent_write(principal, namespace, request_id, "session_create", raw,
                                       body)

    async def session_append(
        self, principal: Principal, namespace: str, *, session_id: str, type: str,
        payload: Any, event_id: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        sid = parse_uuid(session_id, "session_id")
        if not isinstance(type, str) or not EVENT_TYPE_RE.fullmatch(type):
            raise InvalidInput("type must be 1-64 chars of a-z, 0-9, '_', '.', ':' or '-'",
                               field="type")
        event_id = opt_key(event_id, "event_id", EVENT_ID_MAX)
        digest = request_hash("session_append_event", {"type": type, "payload": payload})
        clean = _payload(payload)
        screening = screen(*json_strings(clean))

        async def append(conn: Conn) -> dict[str, Any]:
            session = await one(conn, "sessions.lock", {"namespace": namespace, "id": sid})
            if session is None:
                raise NotFound(f"no session {sid} in namespace {namespace!r}")
            if event_id is not None:
                # Under the session lock, so a concurrent append of the same event_id has
                # either committed (we replay it) or not started.
                prior = await one(conn, "sessions.event_by_event_id", {
                    "namespace": namespace, "session_id": sid, "event_id": event_id,
                })
                if prior is not None:
                    if bytes(prior["request_hash"]) != digest:
                        raise IdempotencyMismatch(
                            "this event_id was already used for a different event",
                            remedy="Use a new event_id for a different event.",
                            event_id=event_id, seq=prior["seq"],
                        )
                    return {"outcome": "replayed", "event": event_dict(prior),
                            "quarantine": {"quarantined": prior["quarantined"],
                                           "reasons": list(prior["quarantine_reasons"])}}
            bumped = await one(conn, "sessions.bump_seq", {"namespace": namespace, "id": sid})
            if bumped is None:
                # The row is locked, so it is the session as it is now.
                raise Conflict(
                    f"session {sid} is closed and refuses new events; nothing was appended",
                    remedy="Create a new session (session_create) to keep logging.",
                    session_id=str(sid), status=session["status"],
                    closed_by=session["closed_by"], closed_at=iso(session["closed_at"]),
                    event_count=session["next_seq"],
                )
            row = await one(conn, "sessions.insert_event", {
                "namespace": namespace, "session_id": sid, "seq": bumped["next_seq"],
                "event_id": event_id, "type": type, "payload": Jsonb(clean),
                "request_hash": digest, "author": principal.surface,
                "quarantined": screening.quarantined, "reasons": list(screening.reasons),
            })
            assert row is not None
            return {"outcome": "appended", "event": event_dict(row),
                    "quarantine": screening.as_dict()}

        # Exactly-once (event_id) appends replay safely; others are never retried.
        return await self._run(namespace, append, retry_safe=event_id is not None)

    async def session_close(
        self, principal: Principal, namespace: str, *, session_id: str
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        sid = parse_uuid(session_id, "session_id")

        async def close(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "sessions.close", {"namespace": namespace, "id": sid,
                                                     "surface": principal.surface})
            if row is not None:
                return {"outcome": "closed", "session": session_dict(row)}
            current = await one(conn, "sessions.by_id", {"namespace": namespace, "id": sid})
            if current is None:
                raise NotFound(f"no session {sid} in namespace {namespace!r}")
            return {"outcome": "already_closed", "session": session_dict(current)}

        return await self._run(namespace, close, retry_safe=False)

    async def session_get(
        self, principal: Principal, namespace: str, *, session_id: str,
        include_quarantined: bool = False,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        sid = parse_uuid(session_id, "session_id")

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "sessions.by_id", {"namespace": namespace, "id": sid})
            if row is None:
                raise NotFound(f"no session {sid} in namespace {namespace!r}")
            hidden_if_quarantined(row, include_quarantined, "session")
            return {"session": session_dict(row)}

        return await self._run(namespace, read, retry_safe=True)

    async def session_list(
        self, principal: Principal, namespace: str, *, status: str = "all", limit: int = 20,
        cursor: str | None = None, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if status not in SESSION_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(SESSION_STATUSES)}",
                               field="status")
        limit = bounded_limit(limit, LIST_LIMIT_MAX)
        seal = await self.cursor_seal("sessions", namespace)
        before = decode_cursor(seal, cursor)

        async def read(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, "sessions.list", {
                "namespace": namespace, "status": status, "limit": limit + 1,
                "before_seq": before, "include_quarantined": include_quarantined,
            })
            items, next_cursor = keyset_page(rows, limit, session_dict, seal)
            return {"sessions": items, "next_cursor": next_cursor}

        return await self._run(namespace, read, retry_safe=True)

    async def session_events(
        self, principal: Principal, namespace: str, *, session_id: str,
        after_seq: int | None = None, limit: int = 100, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        sid = parse_uuid(session_id, "session_id")
        if after_seq is None:
            after_seq = 0
        if isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < 0:
            raise InvalidInput("after_seq must be an integer >= 0", field="after_seq")
        limit = bounded_limit(limit, EVENTS_LIMIT_MAX)

        async def read(conn: Conn) -> dict[str, Any]:
            session = await one(conn, "sessions.by_id", {"namespace": namespace, "id": sid})
            if session is None:
                raise NotFound(f"no session {sid} in namespace {namespace!r}")
            rows = await many(conn, "sessions.events", {
                "namespace": namespace, "session_id": sid, "after_seq": after_seq,
                "limit": limit + 1, "include_quarantined": include_quarantined,
            })
            page = rows[:limit]
            return {
                "session_id": sid,
                "status": session["status"],
                "last_seq": session["next_seq"],
                "events": [event_dict(r) for r in page],
                "next_after_seq": page[-1]["seq"] if len(rows) > limit else None,
            }

        return await self._run(namespace, read, retry_safe=True)
