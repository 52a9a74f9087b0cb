"""`BootstrapStore`: session_bootstrap's own reads and its per-token mark on the change feed
(a PostgresBackend mixin over `PgCore`)."""

from __future__ import annotations

from typing import Any

from ...bootstrap import HANDOFFS_SHOWN_MAX, OVERVIEW_RECENT_MAX
from ...changes import PURPOSE, FeedPosition, encode_feed_cursor
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...sanitize import wrap_untrusted
from ...search import check_int
from ..memories.changes import change_dict
from ..queries import q
from ..rows import Conn, many, one, one_row
from ..server_secrets import ServerSecrets

PREVIEW_CHARS = 300  # of a handoff's body: enough to decide whether to load it


def handoff_preview(row: dict[str, Any]) -> dict[str, Any]:
    """A handoff as a bootstrap lists it: enough to choose it, small enough for a budget.
    handoff_load(id) returns the whole of it."""
    body = row["body"]
    return {"id": str(row["id"]), "title": wrap_untrusted(row["title"]),
            "body_preview": wrap_untrusted(body[:PREVIEW_CHARS]),
            "body_chars": len(body), "next_steps": len(row["next_steps"]),
            "for_surface": row["for_surface"], "author_client": row["author_client"],
            "created_at": iso(row["created_at"])}


class BootstrapStore(ServerSecrets):
    async def database_identity(self, principal: Principal, namespace: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "bootstrap.identity", {})
            assert row is not None  # migration 0031 inserts the one row
            return {"instance_id": str(row["instance_id"]),
                    "server_version": row["server_version"],
                    "migration_level": row["migration_level"],
                    "database_time": iso(row["database_time"]),
                    "pooled": self.pooled}

        return await self._run(namespace, read, retry_safe=True)

    async def open_handoffs(
        self, principal: Principal, namespace: str, *, limit: int = 5,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        limit = check_int(limit, "limit", 0, HANDOFFS_SHOWN_MAX)

        async def read(conn: Conn) -> dict[str, Any]:
            # LIMIT 0 would return no row to carry the total: read one, show none.
            rows = await many(conn, "bootstrap.open_handoffs",
                              {"namespace": namespace, "surface": principal.surface,
                               "limit": max(limit, 1)})
            total = rows[0]["total"] if rows else 0
            return {"handoffs": [handoff_preview(r) for r in rows[:limit]], "total": total}

        return await self._run(namespace, read, retry_safe=True)

    async def embedding_backlog(self, principal: Principal, namespace: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "bootstrap.embedding_backlog", {"namespace": namespace})
            assert row is not None  # an aggregate
            return dict(row)

        return await self._run(namespace, read, retry_safe=True)

    async def bootstrap_overview(self, principal: Principal, namespace: str, *,
                                 recent: int = 10) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        recent = check_int(recent, "recent", 0, OVERVIEW_RECENT_MAX)
        seal = await self.cursor_seal(PURPOSE, namespace)

        async def read(conn: Conn) -> dict[str, Any]:
            horizon = (await one_row(conn, "changes.head", {}))["horizon"]
            below = {"namespace": namespace, "horizon": horizon}
            counts = await many(conn, "bootstrap.overview_changes", below)
            newest = await many(conn, "bootstrap.overview_newest_changes",
                                {**below, "limit": recent})
            kinds = await many(conn, "bootstrap.overview_memories", {"namespace": namespace})
            return {"cursor": encode_feed_cursor(seal, FeedPosition(int(horizon), 0)),
                    "counts": {r["what"]: r["n"] for r in counts},
                    "recent": [change_dict(r) for r in reversed(newest)],
                    "active_memories": {r["kind"]: r["n"] for r in kinds}}

        return await self._run(namespace, read, retry_safe=True)

    async def bootstrap_mark(self, principal: Principal, namespace: str) -> dict[str, Any] | None:
        check_namespace(principal, namespace, write=False)

        async def read(conn: Conn) -> dict[str, Any] | None:
            row = await one(conn, "bootstrap.get_mark",
                            {"token_id": principal.token_id, "namespace": namespace})
            return None if row is None else {"cursor": row["cursor"],
                                             "marked_at": iso(row["marked_at"])}

        return await self._run(namespace, read, retry_safe=True)

    async def save_bootstrap_mark(self, principal: Principal, namespace: str,
                                  cursor: str) -> None:
        check_namespace(principal, namespace, write=True)

        async def write(conn: Conn) -> None:
            await conn.execute(q("bootstrap.save_mark"), {
                "token_id": principal.token_id, "namespace": namespace, "cursor": cursor})

        # An upsert to the same value: running it twice is running it once.
        await self._run(namespace, write, retry_safe=True)
