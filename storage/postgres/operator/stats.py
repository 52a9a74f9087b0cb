"""`StatsStore`: what the `stats` tool reports of the database (a PostgresBackend mixin)."""

from __future__ import annotations

from typing import Any

from ...principal import Principal
from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..retrieval.lexicon import due_in
from ..rows import Conn, many, row_of
from .gc import last_run_in, run_summary


def quota_use(row: dict[str, Any]) -> dict[str, int]:
    """A namespace's quota and use as `stats` shows it: a limit it does not have is left out."""
    out = {"memories": row["used_memories"], "bytes": row["used_bytes"]}
    for limit in ("max_memories", "max_bytes"):
        if row[limit] is not None:
            out[limit] = row[limit]
    return out


class StatsStore(PgCore):
    """Implements `CoreBackend.stats`."""

    async def stats(self, principal: Principal) -> dict[str, Any]:
        scope = ALL_NAMESPACES if principal.namespaces is None else principal.namespaces
        if not scope:
            return {"namespaces": {}, "embedding_queue": {"pending": 0, "dead": 0},
                    "observations": {}, "lexicon": {"due": []}}

        async def read(conn: Conn) -> dict[str, Any]:
            counts: dict[str, dict[str, int]] = {}
            if principal.namespaces is None:
                counted = await conn.execute(q("stats.memory_counts"))
                queued = await conn.execute(q("stats.embedding_queue"))
            else:
                mine = {"namespaces": list(principal.namespaces)}
                counted = await conn.execute(q("stats.memory_counts_in"), mine)
                queued = await conn.execute(q("stats.embedding_queue_in"), mine)
            for row in await counted.fetchall():
                counts.setdefault(row["namespace"], {})[row["status"]] = row["n"]
            queue = await row_of(queued)
            due = [row["namespace"] for row in await due_in(conn, principal.namespaces)]
            scoped = {"namespaces": None if principal.namespaces is None
                      else list(principal.namespaces)}
            observed = await many(conn, "trust.observation_totals", scoped)
            quotas = {r["namespace"]: quota_use(r)
                      for r in await many(conn, "stats.quotas", scoped)}
            return {"namespaces": counts, "embedding_queue": dict(queue),
                    **({"quotas": quotas} if quotas else {}),
                    "observations": {r["namespace"]: {"total": r["total"], "open": r["open"]}
                                     for r in observed},
                    "lexicon": {"due": due},
                    "gc": run_summary(await last_run_in(conn), principal)}

        return await self._run(scope, read, retry_safe=True)
