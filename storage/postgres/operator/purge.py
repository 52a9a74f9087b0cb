"""`PostgresPurge`: the purge functions of migration 0023, called on a connection of the role
that owns the schema (DATABASE_URL's, or MEMHUB_DIRECT_DATABASE_URL's behind a pooler).

Not a `PgCore` mixin: the pool's connections run as memhub_app, which may not call the purge
functions, and nothing the tools are handed holds one of these.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ....errors import NotFound, Retryable
from ...admin import Actor
from ...purge import PurgeBackend, PurgeTarget, check_reason
from ..errors import translate
from ..queries import q
from ..rows import Conn, row_of

logger = logging.getLogger(__name__)

# A purge locks the row it removes; a writer or the embedding worker holding a lock the purge
# needs next can make PostgreSQL break a deadlock by rolling one side back. Nothing was removed
# then, so the purge simply runs again.
ATTEMPTS = 3
PURGE_BLOCKS = {"memory": "purge.memory", "handoff": "purge.handoff",
                "session": "purge.session", "artifact": "purge.artifact",
                "namespace": "purge.namespace"}


class PostgresPurge(PurgeBackend):
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Conn]:
        try:
            # No prepared statements: the URL may lead to a transaction pooler.
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, row_factory=dict_row, prepare_threshold=None)
        except psycopg.Error as exc:
            raise translate(exc, committing=False) from exc
        try:
            yield conn
        finally:
            await conn.close()

    async def _transaction(self, statement: str, params: dict[str, Any]) -> dict[str, Any] | None:
        committing = False
        try:
            async with self._connect() as conn, conn.transaction():
                # Every namespace: the checks deferred to COMMIT read tenant tables as this
                # role, under forced row-level security unless it is a superuser.
                await conn.execute(q("purge.scope_all"))
                cur = await conn.execute(statement, params)
                row = await cur.fetchone()
                committing = True
        except psycopg.Error as exc:
            raise translate(exc, committing=committing) from exc
        return row

    async def purge(self, what: PurgeTarget, *, reason: str, actor: Actor) -> dict[str, Any]:
        params = {"target": what.target, "namespace": what.namespace,
                  "reason": check_reason(reason), "actor": actor.name[:200],
                  "source": (actor.source or None) and actor.source[:200]}
        for attempt in range(1, ATTEMPTS + 1):
            try:
                row = await self._transaction(q(PURGE_BLOCKS[what.kind]), params)
                break
            except Retryable:
                if attempt == ATTEMPTS:
                    raise
                logger.warning("purge rolled back by a concurrent transaction; again",
                               extra={"kind": what.kind, "attempt": attempt})
        answer = row["answer"] if row else None
        if answer is None:
            earlier = await self._transaction(q("purge.last_tombstone"), {
                "kind": what.kind, "target": what.target, "namespace": what.namespace})
            details = {"purged_at": earlier["purged_at"].isoformat()} if earlier else {}
            where = f" in namespace {what.namespace!r}" if what.namespace else ""
            raise NotFound(
                f"no {what.kind} {what.target}{where}"
                + (" (purged before)" if earlier else ""),
                remedy="Check the id; `memhub-admin status` lists recent purges in the audit.",
                **details)
        logger.info("purged", extra={"kind": what.kind, "tombstone_id": answer["tombstone_id"],
                                     "removed": answer["removed"]})
        return answer

    async def reclaim(self, tables: list[str]) -> list[str]:
        names = sorted(set(tables))
        async with self._connect() as conn:
            cur = await conn.execute(q("purge.not_owned"), {"tables": names})
            left = [r["relname"] for r in await cur.fetchall()]
            cur = await conn.execute(q("purge.can_clear_statistics"))
            can_clear = (await row_of(cur))["ok"]
            for table in (t for t in names if t not in left):
                try:
                    await conn.execute(
                        sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
                    # ANALYZE of an empty table keeps the statistics it had, sampled values
                    # included: they are cleared instead (PostgreSQL 18 and later).
                    async with conn.transaction():  # every namespace: forced row-level security
                        await conn.execute(q("purge.scope_all"))
                        cur = await conn.execute(sql.SQL(
                            "SELECT NOT EXISTS (SELECT 1 FROM {}) AS empty").format(
                                sql.Identifier(table)))
                        empty = (await row_of(cur))["empty"]
                    if empty:
                        if not can_clear:
                            left.append(table)
                            continue
                        await conn.execute(q("purge.clear_statistics"), {"table": table})
                except psycopg.Error as exc:
                    logger.warning("reclaiming space after a purge failed",
                                   extra={"table": table, "reason": type(exc).__name__})
                    left.append(table)
        return sorted(left)
