"""`MemoryReads`: one memory, a page of memories, a memory's history, and the expiry sweep's
status catch-up (a PostgresBackend mixin over `PgCore`).

Reads by id or key are audit reads: they return a memory whatever its status. Listing is
keyset-paginated, newest first, and hides quarantined memories unless asked.
"""

from __future__ import annotations

from typing import Any

from ....errors import InvalidInput, NotFound
from ... import memory_input as mi
from ...cursors import decode_cursor, encode_cursor
from ...memory_dicts import effective_status, iso, memory_dict
from ...principal import Principal, check_namespace
from ...sanitize import wrap_untrusted
from ..rows import Conn, many, one
from ..server_secrets import ServerSecrets
from .trust import observation_counts


async def purged_details(conn: Conn, params: dict[str, Any]) -> dict[str, Any]:
    """{"purged_at": ...} for a memory id an operator purged (migration 0023), else {}."""
    if "id" not in params:
        return {}
    row = await one(conn, "purge.purged_at", {"namespace": params["namespace"],
                                              "id": str(params["id"])})
    return {"purged_at": iso(row["purged_at"])} if row else {}


class MemoryReads(ServerSecrets):
    """Implements the read half of `MemoryBackend`."""

    async def get_memory(
        self, principal: Principal, namespace: str, *, memory_id: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if (memory_id is None) == (key is None):
            raise InvalidInput("give exactly one of id or key")
        if memory_id is not None:
            name, params = "memories.get_by_id", {"namespace": namespace,
                                                  "id": mi.parse_id(memory_id)}
        else:
            name, params = "memories.get_by_key", {"namespace": namespace,
                                                   "key": mi.check_key(key)}

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, name, params)
            if row is None:
                raise NotFound(f"no such memory in namespace {namespace!r}",
                               **await purged_details(conn, params))
            counts = await observation_counts(conn, namespace, row["id"])
            return {"memory": {**memory_dict(row), "observations": counts}}

        return await self._run(namespace, read, retry_safe=True)

    async def list_memories(
        self,
        principal: Principal,
        namespace: str,
        *,
        kind: str | None = None,
        tag: str | None = None,
        status: str = "ACTIVE",
        limit: int = 50,
        cursor: str | None = None,
        include_quarantined: bool = False,
        key_prefix: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        wanted = mi.check_list_status(status)
        seal = await self.cursor_seal("memories", namespace)
        params = {
            "namespace": namespace,
            "kind": mi.check_kind(kind) if kind is not None else None,
            "tag": mi.check_tags([tag])[0] if tag is not None else None,
            "status": wanted,
            "limit": mi.check_limit(limit),
            "after_seq": decode_cursor(seal, cursor),
            "include_quarantined": bool(include_quarantined),
            "key_prefix": mi.check_key_prefix(key_prefix),
        }
        name = "memories.list_live" if wanted == "ACTIVE" else "memories.list_by_status"

        async def read(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, name, params)
            more = len(rows) == params["limit"]
            return {
                "memories": [memory_dict(r) for r in rows],
                "next_cursor": encode_cursor(seal, rows[-1]["seq"]) if more else None,
            }

        return await self._run(namespace, read, retry_safe=True)

    async def memory_history(
        self, principal: Principal, namespace: str, memory_id: str
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        ids = {"namespace": namespace, "id": mi.parse_id(memory_id)}

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "memories.get_by_id", ids)
            if row is None:
                raise NotFound(f"no memory {ids['id']} in namespace {namespace!r}",
                               **await purged_details(conn, ids))
            revisions = await many(conn, "memories.revisions_of", ids)
            supersedes = await many(conn, "memories.superseded_by_this", ids)
            corroborations = await many(conn, "memories.corroborations_of", ids)
            counts = await observation_counts(conn, namespace, row["id"])
            return {
                "memory": {**memory_dict(row), "observations": counts},
                "status": effective_status(row),
                "superseded_by": str(row["superseded_by"]) if row["superseded_by"] else None,
                # When it was superseded or forgotten (migration 0045): an as_of before it
                # finds the memory current.
                **({"retired_at": iso(row["retired_at"])} if row.get("retired_at") else {}),
                "supersedes": [str(r["id"]) for r in supersedes],
                "revisions": [
                    {
                        "revision": r["revision"],
                        "title": wrap_untrusted(r["title"]),
                        "content": wrap_untrusted(r["content"]),
                        "tags": list(r["tags"]),
                        **({"questions": [wrap_untrusted(q) for q in r["questions"]]}
                           if r["questions"] else {}),
                        "author_client": r["author_client"],
                        "created_at": iso(r["created_at"]),
                        "is_current": r["is_current"],
                    }
                    for r in revisions
                ],
                "corroborations": [
                    {"author_client": c["author_client"], "created_at": iso(c["created_at"])}
                    for c in corroborations
                ],
            }

        return await self._run(namespace, read, retry_safe=True)

    # --- expiry ---------------------------------------------------------------------------
    async def expire_due(self, batch: int = 1000) -> int:
        total = 0
        while True:
            async def sweep(conn: Conn) -> int:
                return len(await many(conn, "memories.expire_due_batch", {"limit": batch}))

            done = await self._run("*", sweep, retry_safe=True)
            total += done
            if done < batch:
                return total
