"""`VitalsStore`: what /metrics reads of the pool and the embedding queue (a PostgresBackend
mixin)."""

from __future__ import annotations

from typing import Any

from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..rows import Conn, row_of

QUEUE_COUNT_CAP = 10_000  # a backlog past this reads as this: enough to alert on, and cheap
# A scrape gives up quickly instead of holding a connection that requests need.
QUEUE_READ_TIMEOUT = "2s"


class VitalsStore(PgCore):
    """Implements `CoreBackend.pool_stats` and `CoreBackend.embedding_queue_state`."""

    def pool_stats(self) -> dict[str, int]:
        return self.pool.get_stats()

    async def embedding_queue_state(self) -> dict[str, Any]:
        async def read(conn: Conn) -> dict[str, Any]:
            cur = await conn.execute(q("embeddings.queue_gauges"), {"cap": QUEUE_COUNT_CAP})
            return {**await row_of(cur), "cap": QUEUE_COUNT_CAP}

        return await self._run(ALL_NAMESPACES, read, retry_safe=True,
                               gucs={"statement_timeout": QUEUE_READ_TIMEOUT})
