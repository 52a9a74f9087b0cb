"""`ActivityStore`: the activity log's writes and the operator's read (migration 0047), a
PostgresBackend mixin over `PgCore`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...activity import ToolEvent, check_activity_limit, check_activity_namespace
from ...memory_dicts import iso
from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..rows import Conn, many


class ActivityStore(PgCore):
    """Implements `ActivityBackend`."""

    async def write_tool_events(self, events: Sequence[ToolEvent]) -> None:
        if not events:
            return
        now = time.monotonic()
        params = {
            "namespaces": [e.namespace for e in events],
            "tools": [e.tool for e in events],
            "surfaces": [e.surface for e in events],
            "token_ids": [e.token_id for e in events],
            "error_codes": [e.error_code for e in events],
            "durations": [e.duration_ms for e in events],
            "ages": [max(now - e.ended, 0.0) for e in events],
        }

        async def write(conn: Conn) -> None:
            await conn.execute(q("activity.write"), params)

        # Background work, with no caller bound: every namespace in scope (rows without one
        # included). Not retried: a replay after a lost COMMIT could write the batch twice.
        # Committed without waiting for the WAL flush: a crash may lose the last batch, which
        # the log accepts anyway, and the transaction ends sooner. While it runs, the change
        # feed's horizon (the oldest running transaction, docs/change-feed.md) stays behind
        # any write that started after it, so a short one delays no reader.
        await self._run(ALL_NAMESPACES, write, retry_safe=False,
                        gucs={"synchronous_commit": "off"})

    async def tool_activity(self, namespace: str, *, limit: int = 100) -> dict[str, Any]:
        ns = check_activity_namespace(namespace)
        params = {"namespace": ns, "limit": check_activity_limit(limit)}

        async def read(conn: Conn) -> list[dict[str, Any]]:
            return await many(conn, "activity.latest", params)

        rows = await self._run(ns, read, retry_safe=True)
        return {"namespace": ns, "events": [
            {"at": iso(r["at"]), "tool": r["tool"], "surface": r["surface"],
             "token_id": r["token_id"], "outcome": r["outcome"], "error_code": r["error_code"],
             "duration_ms": round(r["duration_ms"], 1)} for r in rows]}
