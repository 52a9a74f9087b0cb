"""PostgreSQL's statistics kept up with each namespace's growth (migration 0020).

Every statement is scoped to one namespace, and the planner sizes a namespace from the last
ANALYZE. A namespace written since (a new project, an import) is estimated at one row, where a
join that rescans the namespace for each outer row looks as cheap as a lookup by id: searches
and memory_context of a namespace of a few thousand memories then read millions of rows
(docs/failure-modes.md, docs/performance.md). Autovacuum analyzes a table only after a tenth of it
changed, which beside a large tenant can take a new one's whole life. So, after each lexicon
recount (which has just counted every namespace's live memories), when a namespace of at least
MIN_ROWS memories or vectors holds twice what it held at memhub's last ANALYZE, the namespace
column of memories and memory_embeddings is analyzed (memhub_analyze_namespaces), at most once
per MIN_INTERVAL seconds. A namespace growing to N memories costs about log2(N / MIN_ROWS)
such ANALYZEs, each a sample of 30,000 rows per table (~0.25 s at 57,000 memories).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..queries import q
from ..rows import Conn, row_of

if TYPE_CHECKING:

    from ..core import PgCore

logger = logging.getLogger(__name__)

MIN_ROWS = 50          # below this a misjudged join reads at most ~2,500 rows
MIN_INTERVAL = 10.0    # seconds between two ANALYZEs of one process
ANALYZE_TIMEOUT = "10min"  # sampling is bounded, but a busy server may be slow at it


class PlannerStats:
    """Decides when to analyze; one per background loop (it remembers the last ANALYZE)."""

    def __init__(self, min_interval: float = MIN_INTERVAL) -> None:
        self.min_interval = min_interval
        self._last = float("-inf")

    async def follow(self, backend: PgCore) -> list[str]:
        """ANALYZE if a namespace has doubled since the last one; the namespaces that had."""
        if time.monotonic() - self._last < self.min_interval:
            return []

        async def work(conn: Conn) -> list[str]:
            cur = await conn.execute(q("lexicon.planner_stats_due"), {"min_rows": MIN_ROWS})
            grown = [row["namespace"] for row in await cur.fetchall()]
            if not grown:
                return []
            cur = await conn.execute(q("lexicon.analyze_namespaces"))
            if not (await row_of(cur))["analyzed"]:
                return []  # another process is analyzing; it records what it saw
            await conn.execute(q("lexicon.planner_stats_analyzed"))
            return grown

        started = time.perf_counter()
        grown = await backend._run("*", work, retry_safe=True,
                                   gucs={"statement_timeout": ANALYZE_TIMEOUT})
        if grown:
            self._last = time.monotonic()
            logger.info("planner statistics refreshed", extra={
                "namespaces": len(grown), "ms": round((time.perf_counter() - started) * 1000, 1)})
        return grown
