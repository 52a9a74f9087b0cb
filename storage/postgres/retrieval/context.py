"""`ContextStore`: memory_context, the most useful current memories packed into a token budget
(a PostgresBackend mixin that ranks with `SearchStore`'s legs).

With a query the candidates are the hybrid search's, re-read through stage 0 with their
vectors; without one, the namespace's newest live memories. Packing (per-kind quotas, MMR,
knapsack; storage/context_pack.py) runs off the event loop.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ...context_pack import Candidate, Packed, pack
from ...principal import Principal, check_namespace
from ...retrieval_guard import judge
from ...sanitize import wrap_untrusted
from ...search import MAX_BUDGET_TOKENS, check_ask, check_int, check_kinds, check_query
from ..memories.profiles import context_quota
from ..queries import q
from ..rows import Conn
from .ranking import centroid
from .search import MAX_LEG_DEPTH, MIN_LEG_DEPTH, SearchStore
from .search_legs import LexicalLeg

# memory_context ranks this many candidates per leg for each 1,000 tokens of its budget (within
# MIN_LEG_DEPTH..MAX_LEG_DEPTH) before packing: at ~100 tokens a memory, about four candidates
# for each memory that can fit, enough for the kinds' quotas and MMR to choose from, where a
# fixed 100 read far more than 2,000 tokens can hold (at 100k memories the lexical leg went
# past its strict levels into a loose one: 24 ms against 7 at depth 80, docs/performance.md) and too
# few for a budget of 32,000.
CONTEXT_DEPTH_PER_1K_TOKENS = 40
CONTEXT_RECENT_DEPTH = 300


class ContextStore(SearchStore):
    """Implements `SearchBackend.context`; composed into `PostgresBackend` beside
    `SearchStore`, whose legs it ranks with."""

    async def context(
        self,
        principal: Principal,
        namespace: str,
        query: str | None = None,
        *,
        budget_tokens: int = 2000,
        kinds: list[str] | None = None,
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        """The most useful current memories that fit `budget_tokens` (1-32000), counted by BPE
        over the JSON of the returned list. With a query: ranked by hybrid search; without:
        newest first. Decisions and conventions are served first (per-kind quotas), MMR keeps
        near-duplicates out, a knapsack fills what is left. `also`: other phrasings of the
        query (as memory_search's). Raises INVALID_INPUT, FORBIDDEN."""
        check_namespace(principal, namespace, write=False)
        query = check_query(query, required=False)
        ask = check_ask(query, also) if query is not None else None
        budget_tokens = check_int(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        kinds = check_kinds(kinds)
        lexical: LexicalLeg | None = None
        embedding: asyncio.Task | None = None
        depth = context_depth(budget_tokens)
        if ask is not None:
            lexical, embedding = self._prepare(namespace, ask, "hybrid", kinds, None, depth)
        model = self._model_name()
        rejected = [0]

        async def read(conn: Conn) -> tuple[list[tuple[dict[str, Any], float]],
                                            dict[Any, Any], bool, dict[str, float] | None]:
            # Rows and vectors in one read, binary: 300 vectors parsed from their text form
            # cost ~30 ms of Python. No vectors while degraded (word overlap instead).
            if ask is not None and embedding is not None:
                await self._plan_semantic(conn, namespace, "hybrid", depth, bool(kinds))
                vectors, degraded = await embedding
                vector = centroid(vectors)
                ranked = await self._ranked(conn, namespace, ask, vector, "hybrid", kinds,
                                            None, depth, lexical)
                await self._text_similarities(
                    conn, {"namespace": namespace, "kinds": kinds, "tags": None}, ranked,
                    vectors)
                found = await self._materialise(conn, namespace, ranked,
                                                vectors_of="" if degraded else model,
                                                vector=vector)
                # The budget goes to matches only: a candidate the retrieval guard rejects
                # (storage/retrieval_guard.py) would read as evidence it is not, and cost the
                # client's context. A query nothing matches gets an empty pack; without a
                # query the newest memories are served as before.
                verdicts = judge([r["why"] for r in found], texts=len(ask.texts))
                rejected[0] = sum(1 for v in verdicts if not v["admitted"])
                found = [r for r, v in zip(found, verdicts, strict=True) if v["admitted"]]
                top = max((r["score"] for r in found), default=1.0)
                scored = [(r["row"], r["score"] / top) for r in found]
            else:
                degraded = not self._model_ready()
                cur = await conn.execute(q("search.context_recent"), {
                    "namespace": namespace, "kinds": kinds, "depth": CONTEXT_RECENT_DEPTH,
                    "model": "" if degraded else model}, binary=True)
                rows = await cur.fetchall()
                # Newer is more useful, gently: the 300th memory still counts for something.
                scored = [(row, 1.0 / (1.0 + i / 25)) for i, row in enumerate(rows)]
            vectors = {row["id"]: row["embedding"] for row, _ in scored
                       if row["embedding"] is not None}
            return scored, vectors, degraded, await context_quota(conn, namespace)

        scored, vectors, degraded, quota = await self._read_beside(namespace, read, lexical,
                                                                   embedding)
        # Off the event loop: counting each candidate's tokens and packing take tens of
        # milliseconds for a few hundred candidates, which other requests should not wait on.
        packed = await asyncio.to_thread(pack_scored, scored, vectors, budget_tokens, quota)
        return context_answer(packed, budget_tokens, rejected[0], degraded)


def context_answer(packed: Any, budget_tokens: int, rejected: int,
                   degraded: bool) -> dict[str, Any]:
    """memory_context's answer from what was packed (the present's or as of a past time)."""
    return {"memories": [c.item for c in packed.chosen], "tokens_used": packed.tokens_used,
            "budget_tokens": budget_tokens, "omitted": packed.omitted, "rejected": rejected,
            "degraded": degraded}


def pack_scored(scored: list[tuple[dict[str, Any], float]], vectors: dict[Any, Any],
                 budget_tokens: int, quota: dict[str, float] | None = None) -> Packed:
    candidates = [
        Candidate(key=str(row["id"]), kind=row["kind"], item=context_item(row),
                  relevance=max(relevance, 1e-6), vector=_as_array(vectors.get(row["id"])))
        for row, relevance in scored
    ]
    return pack(candidates, budget_tokens, quota)


def context_depth(budget_tokens: int) -> int:
    """Candidates per leg memory_context ranks for `budget_tokens` (CONTEXT_DEPTH_PER_1K_TOKENS)."""
    return min(max(math.ceil(CONTEXT_DEPTH_PER_1K_TOKENS * budget_tokens / 1000), MIN_LEG_DEPTH),
               MAX_LEG_DEPTH)


def context_item(row: dict[str, Any]) -> dict[str, Any]:
    """The compact form memory_context sends (and counts): what a model needs to use a memory
    and to cite or revise it; title and content travel as one untrusted-data block."""
    text = f"{row['title']}\n{row['content']}" if row["title"] else row["content"]
    item = {"id": str(row["id"]), "kind": row["kind"], "revision": row["current_revision"],
            "text": wrap_untrusted(text)}
    if row.get("needs_reverification"):
        item["needs_reverification"] = True  # only when due: every item's tokens count
    if row.get("current_now") is False:
        item["current_now"] = False  # read as of a past time, and changed since
    return item


def _as_array(value: Any) -> Any:  # a float32 numpy array, or None
    if value is None:
        return None
    import numpy as np

    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value,
                      dtype=np.float32)
