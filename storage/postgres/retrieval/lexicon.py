"""Per-namespace word statistics for BM25 (migration 0007), kept fresh in the background.

The lexical leg weights each query word by its inverse document frequency in the namespace.
Those frequencies are recounted here (memhub_refresh_lexicon: ts_stat over the live memories)
rather than at query time, because counting the memories that hold a common word means reading
all of its postings. A namespace is recounted when it has never been counted, or when memories
written since are a noticeable share of it (DUE_SHARE), or, with anything new, when it is small
(DUE_SMALL: a recount takes milliseconds) or its last count is old (DUE_MAX_AGE). Between
recounts the weights lag behind the writes; results do not: what may be returned is decided by
stage 0 at query time, and a word first seen after the last count is treated as rare.

Two memhub processes on one database may both run this; each namespace is recounted by one at
a time (an advisory lock in the SQL function), the other skips it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ....errors import MemhubError
from ..queries import q
from ..rows import Conn, row_of
from .planner_stats import PlannerStats

if TYPE_CHECKING:

    from ..core import PgCore

logger = logging.getLogger(__name__)

DUE_SMALL = 2000        # memories: below this, any new memory makes the namespace due
DUE_SHARE = 0.05        # above it, new memories must be this share of the counted ones
DUE_MAX_AGE = 600       # seconds: or the last count must be this old (with anything new)
DUE_COUNT_CAP = 100_000  # new memories counted per namespace when deciding
RECOUNT_TIMEOUT = "10min"


async def due_in(conn: Conn,
                 namespaces: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """[{namespace, docs, new}] of the namespaces visible in this transaction that should be
    recounted (the policy in the module docstring). `namespaces`: the transaction's scope when
    it is a list (a scoped token's `stats`): those are probed one by one instead of walking
    the namespaces' index, whose walk passes every other namespace's entries before reaching
    them (row-level security drops those only after reading them)."""
    if namespaces is None:
        cur = await conn.execute(q("lexicon.namespaces"), {"max_age": DUE_MAX_AGE})
    else:
        cur = await conn.execute(q("lexicon.namespaces_in"), {
            "max_age": DUE_MAX_AGE, "namespaces": sorted(set(namespaces))})
    out = []
    for row in await cur.fetchall():
        # Unnamed, so planned for these values: the generic plan PostgreSQL switches a
        # prepared statement to reads other namespaces' rows too (it walked the table-wide seq
        # index before migration 0015, 74 ms at 111k memories every period; it scans the table
        # since), where planned for the values it reads this namespace's new rows only.
        cur = await conn.execute(q("lexicon.new_since"), {
            "namespace": row["namespace"], "after": row["max_seq"] or 0, "cap": DUE_COUNT_CAP},
            prepare=False)
        new = (await row_of(cur))["new"]
        counted = row["docs"]
        if counted is None or (new > 0 and (counted <= DUE_SMALL or new >= counted * DUE_SHARE
                                            or row["old"])):
            out.append({"namespace": row["namespace"], "docs": counted, "new": new})
    return out


async def due(backend: PgCore, scope: str | list[str] = "*") -> list[dict[str, Any]]:
    """[{namespace, docs, new}] of the namespaces in `scope` that should be recounted."""
    return await backend._run(scope, due_in, retry_safe=True)


async def refresh(backend: PgCore, namespace: str) -> int:
    """Recount one namespace now; the memories counted, or -1 if another session is on it."""
    async def work(conn: Conn) -> int:
        cur = await conn.execute(q("lexicon.refresh"), {"namespace": namespace})
        return (await row_of(cur))["docs"]

    # A recount reads the whole namespace: at a few hundred thousand memories it can outlast
    # the request-sized statement timeout, and a recount that always times out never lands.
    return await backend._run(namespace, work, retry_safe=True,
                              gucs={"statement_timeout": RECOUNT_TIMEOUT})


async def refresh_due(backend: PgCore) -> dict[str, int]:
    """Recount every namespace that is due: {namespace: memories counted}."""
    done = {}
    for row in await due(backend):
        started = time.perf_counter()
        docs = await refresh(backend, row["namespace"])
        if docs >= 0:
            done[row["namespace"]] = docs
            logger.info("lexicon recounted", extra={
                "namespace": row["namespace"], "memories": docs, "new": row["new"],
                "ms": round((time.perf_counter() - started) * 1000, 1)})
    return done


async def refresh_forever(backend: PgCore, period: float,
                          record_run: Callable[[bool], None] = lambda ok: None) -> None:
    """Recount what is due every `period` seconds, until cancelled; `record_run(ok)` after each
    recount (the app's metrics)."""
    planner = PlannerStats()
    while True:
        try:
            await refresh_due(backend)
        except MemhubError as err:
            # A database blip must not stop the recounts; the next period tries again.
            logger.warning("lexicon recount failed", extra={"code": err.code})
            record_run(False)
        else:
            record_run(True)
        try:
            # The recount has just sized every namespace: what the planner was last told of
            # them is checked against those sizes (storage/postgres/retrieval/planner_stats.py).
            await planner.follow(backend)
        except MemhubError as err:
            logger.warning("planner statistics refresh failed", extra={"code": err.code})
        await asyncio.sleep(period)
