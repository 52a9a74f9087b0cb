"""`AsOfReads`: memory_get and memory_list as of a past time (a PostgresBackend mixin over
`ServerSecrets`, for the listing's sealed cursors; storage/as_of.py, as_of.sql).

Both read memhub_memories_at (migration 0045): each memory at the revision it had then. The
listing keeps what was current then (stage 0 as of then, memhub_memories_as_of); the read by
id or key is an audit read, whatever the memory's status was then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ....errors import InvalidInput, NotFound
from ... import memory_input as mi
from ...as_of import future_as_of, memory_then
from ...cursors import decode_cursor, encode_cursor
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ..rows import Conn, many, one, one_row
from ..server_secrets import ServerSecrets
from .memory_reads import purged_details


async def check_past(conn: Conn, as_of: datetime) -> None:
    """INVALID_INPUT unless as_of is not later than the database's now."""
    if not (await one_row(conn, "as_of.check", {"as_of": as_of}))["past"]:
        raise future_as_of(as_of)


class AsOfReads(ServerSecrets):
    """Implements the read half of `AsOfBackend`."""

    async def get_as_of(
        self, principal: Principal, namespace: str, as_of: datetime, *,
        memory_id: str | None = None, key: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if (memory_id is None) == (key is None):
            raise InvalidInput("give exactly one of id or key")
        params: dict[str, Any] = {"namespace": namespace, "as_of": as_of}
        if memory_id is not None:
            name, params["id"] = "as_of.get_by_id", mi.parse_id(memory_id)
        else:
            name, params["key"] = "as_of.get_by_key", mi.check_key(key)

        async def read(conn: Conn) -> dict[str, Any]:
            await check_past(conn, as_of)
            row = await one(conn, name, params)
            if row is None:
                born = await one_row(conn, "as_of.born", {"id": None, "key": None, **params})
                if born["created_at"] is not None:
                    raise NotFound("that memory was born after as_of",
                                   remedy="Read it without as_of, or ask as of a later time.",
                                   created_at=iso(born["created_at"]))
                raise NotFound(f"no such memory in namespace {namespace!r}",
                               **await purged_details(conn, params))
            return {"memory": memory_then(row), "as_of": iso(as_of)}

        return await self._run(namespace, read, retry_safe=True)

    async def list_as_of(
        self, principal: Principal, namespace: str, as_of: datetime, *,
        kind: str | None = None, tag: str | None = None, status: str = "ACTIVE",
        limit: int = 50, cursor: str | None = None, include_quarantined: bool = False,
        key_prefix: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if status != "ACTIVE":
            raise InvalidInput("as_of lists the memories current then: status must be ACTIVE",
                               field="status",
                               remedy="Leave status out with as_of; memory_history shows one "
                                      "memory's every revision and status.")
        # A page position is a seq, as in the present listing: one sealed cursor serves both.
        seal = await self.cursor_seal("memories", namespace)
        params = {
            "namespace": namespace,
            "as_of": as_of,
            "kind": mi.check_kind(kind) if kind is not None else None,
            "tag": mi.check_tags([tag])[0] if tag is not None else None,
            "limit": mi.check_limit(limit),
            "after_seq": decode_cursor(seal, cursor),
            "include_quarantined": bool(include_quarantined),
            "key_prefix": mi.check_key_prefix(key_prefix),
        }

        async def read(conn: Conn) -> dict[str, Any]:
            await check_past(conn, as_of)
            rows = await many(conn, "as_of.list", params)
            more = len(rows) == params["limit"]
            return {
                "memories": [memory_then(r) for r in rows],
                "next_cursor": encode_cursor(seal, rows[-1]["seq"]) if more else None,
                "as_of": iso(as_of),
            }

        return await self._run(namespace, read, retry_safe=True)
