"""`HandoffStore`: handoffs one client leaves for the next (a mixin over `PgCore`).

Taking a handoff is a single-statement compare-and-set (`UPDATE ... WHERE status = 'open'`):
of two clients loading the same handoff exactly one wins; the other is told who took it
and when.
"""

from __future__ import annotations

from typing import Any

from ....errors import Conflict, InvalidInput, NotFound
from ...cursors import decode_cursor, keyset_page
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...sanitize import screen, wrap_untrusted
from ...work_input import (
    BODY_MAX,
    LIST_ITEMS_MAX,
    LIST_LIMIT_MAX,
    REF_MAX,
    REQUEST_ID_MAX,
    STEP_MAX,
    SURFACE_RE,
    TITLE_MAX,
    bounded_limit,
    hidden_if_quarantined,
    opt_key,
    parse_uuid,
    text_field,
    text_list,
)
from ..idempotency import IdempotentWrites
from ..rows import Conn, many, one
from ..server_secrets import ServerSecrets

HANDOFF_STATUSES = ("open", "taken", "all")


def handoff_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row["id"]),
        "namespace": row["namespace"],
        "title": wrap_untrusted(row["title"]),
        "body": wrap_untrusted(row["body"]),
        "next_steps": [wrap_untrusted(s) for s in row["next_steps"]],
        "refs": [wrap_untrusted(r) for r in row["refs"]],
        "for_surface": row["for_surface"],
        "author_client": row["author_client"],
        "status": row["status"],
        "taken_by": row["taken_by"],
        "taken_at": iso(row["taken_at"]),
        "created_at": iso(row["created_at"]),
        "quarantined": row["quarantined"],
        "quarantine_reasons": list(row["quarantine_reasons"]),
    }


class HandoffStore(ServerSecrets, IdempotentWrites):
    async def handoff_save(
        self, principal: Principal, namespace: str, *, title: str, body: str,
        next_steps: list[str] | None = None, refs: list[str] | None = None,
        for_surface: str | None = None, client_request_id: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        raw = {"title": title, "body": body, "next_steps": next_steps or [], "refs": refs or [],
               "for_surface": for_surface}
        title = text_field(title, "title", max_chars=TITLE_MAX)
        body = text_field(body, "body", max_chars=BODY_MAX)
        steps = text_list(next_steps, "next_steps", max_items=LIST_ITEMS_MAX, max_chars=STEP_MAX)
        refs_ = text_list(refs, "refs", max_items=LIST_ITEMS_MAX, max_chars=REF_MAX)
        if for_surface is not None and (
            not isinstance(for_surface, str) or not SURFACE_RE.fullmatch(for_surface)
        ):
            raise InvalidInput("for_surface must be a surface name (a-z, 0-9, '-', <= 32 chars)",
                               field="for_surface")
        request_id = opt_key(client_request_id, "client_request_id", REQUEST_ID_MAX)
        screening = screen(title, body, *steps, *refs_)

        async def body_fn(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "handoffs.insert", {
                "namespace": namespace, "title": title, "body": body, "next_steps": steps,
                "refs": refs_, "for_surface": for_surface, "author": principal.surface,
                "quarantined": screening.quarantined, "reasons": list(screening.reasons),
            })
            assert row is not None
            return {"outcome": "created", "handoff": handoff_dict(row),
                    "quarantine": screening.as_dict()}

        return await self._idempotent_write(principal, namespace, request_id, "handoff_save", raw,
                                       body_fn)

    async def handoff_load(
        self, principal: Principal, namespace: str, *, handoff_id: str | None = None,
        take: bool = True, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=take)
        wanted = parse_uuid(handoff_id, "id") if handoff_id is not None else None

        async def load(conn: Conn) -> dict[str, Any]:
            if wanted is None:
                row = await one(conn, "handoffs.latest_open_for", {
                    "namespace": namespace, "surface": principal.surface,
                    "include_quarantined": include_quarantined,
                })
                if row is None:
                    raise NotFound(
                        f"no open handoff for surface {principal.surface!r} or for anyone in "
                        f"namespace {namespace!r}",
                        remedy="Call handoff_list to see every handoff, or save one first.",
                    )
            else:
                row = await one(conn, "handoffs.by_id", {"namespace": namespace, "id": wanted})
                if row is None:
                    raise NotFound(f"no handoff {wanted} in namespace {namespace!r}")
                hidden_if_quarantined(row, include_quarantined, "handoff")
            if not take:
                return {"outcome": "peeked", "handoff": handoff_dict(row)}
            taken = await one(conn, "handoffs.take", {
                "namespace": namespace, "id": row["id"], "surface": principal.surface,
            })
            if taken is None:
                current = await one(conn, "handoffs.by_id", {"namespace": namespace,
                                                             "id": row["id"]})
                assert current is not None
                raise Conflict(
                    f"handoff {row['id']} was already taken by {current['taken_by']!r}; "
                    "you did not take it",
                    remedy="Someone else picked it up; read it with take=false, or load "
                           "another open handoff.",
                    handoff_id=str(row["id"]), status=current["status"],
                    taken_by=current["taken_by"], taken_at=iso(current["taken_at"]),
                )
            return {"outcome": "taken", "handoff": handoff_dict(taken)}

        # Taking is a write without an idempotency key: never replayed after a lost connection.
        return await self._run(namespace, load, retry_safe=not take)

    async def handoff_list(
        self, principal: Principal, namespace: str, *, status: str = "open", limit: int = 20,
        cursor: str | None = None, include_quarantined: bool = False,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if status not in HANDOFF_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(HANDOFF_STATUSES)}",
                               field="status")
        limit = bounded_limit(limit, LIST_LIMIT_MAX)
        seal = await self.cursor_seal("handoffs", namespace)
        before = decode_cursor(seal, cursor)

        async def read(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, "handoffs.list", {
                "namespace": namespace, "status": status, "limit": limit + 1,
                "before_seq": before, "include_quarantined": include_quarantined,
            })
            items, next_cursor = keyset_page(rows, limit, handoff_dict, seal)
            return {"handoffs": items, "next_cursor": next_cursor}

        return await self._run(namespace, read, retry_safe=True)
