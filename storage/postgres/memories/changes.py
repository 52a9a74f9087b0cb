"""`ChangeFeedStore`: the change feed on PostgreSQL (a mixin over `PgCore`).

The rows are written by triggers (migration 0028); this side reads them from a position, only
below the reading snapshot's xmin, and says where to read next in a sealed cursor
(docs/change-feed.md)."""

from __future__ import annotations

from typing import Any

from ....errors import CursorExpired
from ...changes import (
    DEFAULT_LIMIT,
    PURPOSE,
    START,
    FeedPosition,
    check_feed_limit,
    decode_feed_cursor,
    encode_feed_cursor,
)
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ..rows import Conn, many, one_row
from ..server_secrets import ServerSecrets


def change_dict(row: dict[str, Any]) -> dict[str, Any]:
    change = {"change_id": row["id"], "what": row["what"], "target_type": row["target_type"]}
    if row["target_id"] is not None:  # none for "purged": a purge leaves no id behind
        change["target_id"] = str(row["target_id"])
    change.update(revision=row["revision"], surface=row["surface"], at=iso(row["at"]))
    if row["replacement_id"] is not None:
        change["replacement_id"] = str(row["replacement_id"])
    return change


def _check_not_expired(namespace: str, after: FeedPosition, first: dict[str, Any]) -> None:
    if after > FeedPosition(int(first["next_xid"]), 0):
        # Every position this database issued is below the xid it will assign next: this
        # cursor comes from another database (a restore, a different server).
        raise CursorExpired("cursor is ahead of this database: it was issued by another one",
                            namespace=namespace)
    if first["trimmed_xid"] is not None and after < FeedPosition(int(first["trimmed_xid"]),
                                                                 first["trimmed_id"]):
        raise CursorExpired("changes after this cursor are no longer kept", namespace=namespace)


class ChangeFeedStore(ServerSecrets):
    """Implements `ChangeFeedBackend`."""

    async def memory_changes(self, principal: Principal, namespace: str, *,
                             cursor: str | None = None,
                             limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        limit = check_feed_limit(limit)
        seal = await self.cursor_seal(PURPOSE, namespace)
        given = decode_feed_cursor(seal, cursor)
        after = given or START

        async def read(conn: Conn) -> list[dict[str, Any]]:
            return await many(conn, "changes.read", {
                "namespace": namespace, "after_xid": str(after.xid),
                "after_id": after.change_id, "fetch": limit + 1})

        rows = await self._run(namespace, read, retry_safe=True)
        first = rows[0]
        if given is not None:
            _check_not_expired(namespace, given, first)
        found = [row for row in rows if row["id"] is not None]
        has_more = len(found) > limit
        page = found[:limit]
        if has_more:
            last = page[-1]
            position = FeedPosition(int(last["xid"]), last["id"])
        else:
            # Everything below the horizon has been read, and nothing can appear there later.
            position = max(after, FeedPosition(int(first["horizon"]), 0))
        return {"changes": [change_dict(row) for row in page],
                "next_cursor": encode_feed_cursor(seal, position), "has_more": has_more}

    async def change_feed_head(self, principal: Principal, namespace: str) -> str:
        check_namespace(principal, namespace, write=False)

        async def read(conn: Conn) -> dict[str, Any]:
            return await one_row(conn, "changes.head", {})

        row = await self._run(namespace, read, retry_safe=True)
        return encode_feed_cursor(await self.cursor_seal(PURPOSE, namespace),
                                  FeedPosition(int(row["horizon"]), 0))
