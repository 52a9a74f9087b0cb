"""`SearchStore`: hybrid retrieval and context packing over PostgreSQL (a PostgresBackend mixin).

Every leg selects from `live_memories` inside a read transaction scoped (by RLS) to the
namespace, so stage 0 (ACTIVE, not expired) binds before anything is ranked, and the final rows
are re-read through the same view. Fusion is RRF over ranks (storage.fusion).

A hybrid search uses two transactions at once. The lexical leg (storage/lexical_leg.py) starts
in its own short one WHILE the query is embedded in a thread (PostgreSQL and the model are
different processes, so on a small machine they overlap instead of adding up). The second one
opens at the same time, so its round trips overlap the model too, and waits for the vector;
then it runs the semantic leg, alongside the lexical leg if that is still going, takes the
lexical ids (as soon as they are read, not after the leg's COMMIT) and re-reads the fused ids
through stage 0, so a memory retired in between drops out. Lexical- and semantic-only searches
use one.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import psycopg

from errors import Unavailable
from storage.base import Principal, check_namespace
from storage.base_search import (
    MAX_BUDGET_TOKENS,
    MAX_LIMIT,
    check_int,
    check_kinds,
    check_mode,
    check_query,
    check_tags,
)
from storage.context_pack import Candidate, Packed, pack
from storage.fusion import rrf
from storage.lexical_leg import lexical_leg
from storage.memory_dicts import memory_dict
from storage.queries import q
from storage.sanitize import wrap_untrusted

if TYPE_CHECKING:
    import numpy as np

    from storage.embedder import Embedder

logger = logging.getLogger(__name__)

# How deep each leg ranks before fusion: deeper lists let RRF reward agreement between legs,
# and cost both legs work (the lexical levels stop at the depth; the semantic leg re-checks each
# neighbour through stage 0). 30 for the default limit of 10: measured against 50, 40, 25 and 20
# on SciFact (hybrid nDCG@10 at limit 10 within +-0.002 of each other, no trend) and the eval set
# (0.810-0.815), and ~1.1 ms faster end-to-end than 50 at 100k (docs/perf.md, sixteenth session).
MIN_LEG_DEPTH = 30
MAX_LEG_DEPTH = 200
# A memory must match at least ceil(share x meaningful words) of the query's words to be a
# lexical hit (one- and two-word queries: one word; five words: two). Chosen by the same rule as
# the semantic gate in docs/eval/threshold-sweep.md.
LEXICAL_MIN_COVERAGE = 0.34
# ... but never more than two words: in a long question (a sentence, a claim) BM25 already ranks
# the memories sharing its rare words first, and asking for a third of twelve words drops
# relevant ones (SciFact, docs/perf.md). Queries of up to five words are unaffected.
LEXICAL_MAX_NEED = 2
# The lexical leg's bounded work (storage/lexical_leg.py, docs/perf.md): the memories of the
# rarest words are read while their counts add up to at most this many, and each coverage level
# of the common words stops at this many (the levels together too, except when the every-word
# level is read after an overflowing one: then up to twice this, migration 0009); every
# candidate is then scored by BM25.
LEXICAL_CANDIDATES = 1000
# memory_context ranks this many candidates per leg for each 1,000 tokens of its budget (within
# MIN_LEG_DEPTH..MAX_LEG_DEPTH) before packing: at ~100 tokens a memory, about four candidates
# for each memory that can fit, enough for the kinds' quotas and MMR to choose from, where a
# fixed 100 read far more than 2,000 tokens can hold (at 100k memories the lexical leg went
# past its strict levels into a loose one: 24 ms against 7 at depth 80, docs/perf.md) and too
# few for a budget of 32,000.
CONTEXT_DEPTH_PER_1K_TOKENS = 40
CONTEXT_RECENT_DEPTH = 300


class SearchStore:
    embedder: Embedder | None = None  # set by storage.embedding_worker.start
    lexical_min_coverage: float = LEXICAL_MIN_COVERAGE
    lexical_max_need: int = LEXICAL_MAX_NEED

    # --- public API -----------------------------------------------------------------------
    async def search(
        self,
        principal: Principal,
        namespace: str,
        query: str,
        *,
        limit: int = 10,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        mode: str = "hybrid",
    ) -> dict[str, Any]:
        """Hybrid (lexical + semantic, RRF-fused), lexical-only or semantic-only search.

        Raises INVALID_INPUT (bounds: query 1-1000 chars, limit 1-100, known kinds, <= 32
        tags), FORBIDDEN, UNAVAILABLE for mode='semantic' while the model is not ready.
        `hybrid` without a model degrades to lexical and returns degraded=true.
        """
        check_namespace(principal, namespace, write=False)
        query = check_query(query, required=True)
        limit = check_int(limit, "limit", 1, MAX_LIMIT)
        kinds, tags, mode = check_kinds(kinds), check_tags(tags), check_mode(mode)
        depth = min(max(2 * limit, MIN_LEG_DEPTH), MAX_LEG_DEPTH)
        lexical, embedding = self._prepare(namespace, query, mode, kinds, tags, depth)

        async def read(conn: psycopg.AsyncConnection) -> tuple[list[dict[str, Any]], bool]:
            await self._plan_semantic(conn, namespace, mode, depth, bool(kinds or tags))
            vector, degraded = await embedding
            ranked = await self._ranked(conn, namespace, query, vector, mode, kinds, tags, depth,
                                        lexical)
            return await self._materialise(conn, namespace, ranked[:limit]), degraded

        results, degraded = await self._read_beside(namespace, read, lexical, embedding)
        return {
            "results": [
                {"memory": memory_dict(r["row"]), "score": round(r["score"], 6), "why": r["why"]}
                for r in results
            ],
            "mode": mode,
            "degraded": degraded,
        }

    async def context(
        self,
        principal: Principal,
        namespace: str,
        query: str | None = None,
        *,
        budget_tokens: int = 2000,
        kinds: list[str] | None = None,
    ) -> dict[str, Any]:
        """The most useful current memories that fit `budget_tokens` (1-32000), counted by BPE
        over the JSON of the returned list. With a query: ranked by hybrid search; without:
        newest first. Decisions and conventions are served first (per-kind quotas), MMR keeps
        near-duplicates out, a knapsack fills what is left. Raises INVALID_INPUT, FORBIDDEN."""
        check_namespace(principal, namespace, write=False)
        query = check_query(query, required=False)
        budget_tokens = check_int(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        kinds = check_kinds(kinds)
        lexical = embedding = None
        depth = context_depth(budget_tokens)
        if query is not None:
            lexical, embedding = self._prepare(namespace, query, "hybrid", kinds, None, depth)
        model = self.embedder.model_name if self.embedder is not None else ""

        async def read(conn: psycopg.AsyncConnection):
            # Rows and vectors in one read, binary: 300 vectors parsed from their text form
            # cost ~30 ms of Python. No vectors while degraded (word overlap instead).
            if query is not None:
                await self._plan_semantic(conn, namespace, "hybrid", depth, bool(kinds))
                vector, degraded = await embedding
                ranked = await self._ranked(conn, namespace, query, vector, "hybrid", kinds,
                                            None, depth, lexical)
                found = await self._materialise(conn, namespace, ranked,
                                                vectors_of="" if degraded else model)
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
            return scored, vectors, degraded

        scored, vectors, degraded = await self._read_beside(namespace, read, lexical, embedding)
        # Off the event loop: counting each candidate's tokens and packing take tens of
        # milliseconds for a few hundred candidates, which other requests should not wait on.
        packed = await asyncio.to_thread(_pack_scored, scored, vectors, budget_tokens)
        return {
            "memories": [c.item for c in packed.chosen],
            "tokens_used": packed.tokens_used,
            "budget_tokens": budget_tokens,
            "omitted": packed.omitted,
            "degraded": degraded,
        }

    # --- internals ------------------------------------------------------------------------
    def _search_gucs(self) -> dict[str, str]:
        return search_gucs(self.settings.hnsw_ef_search)

    def _model_ready(self) -> bool:
        return self.embedder is not None and self.embedder.ready

    def _prepare(
        self,
        namespace: str,
        query: str,
        mode: str,
        kinds: list[str] | None,
        tags: list[str] | None,
        depth: int,
    ) -> tuple[_LexicalLeg | None, asyncio.Task]:
        """Start what runs beside the caller's transaction: (the lexical leg, for `hybrid`;
        the query's embedding -> (vector or None, degraded)).

        The lexical leg runs in its own read transaction and resolves with its ids as soon as
        they are read (its COMMIT follows on its own); `_ranked` awaits it after the semantic
        leg. The caller opens its transaction at once (after `_holding`) and awaits the
        embedding inside it, so its round trips overlap the model instead of following it.
        Other modes have only one leg, which runs with the final read."""
        lexical = None
        if mode == "hybrid":
            params = {"namespace": namespace, "kinds": kinds, "tags": tags, "depth": depth}
            lexical = _LexicalLeg()

            async def leg(conn: psycopg.AsyncConnection) -> list[Any]:
                lexical.holding.set()
                ids = await self._lexical(conn, query, params)
                if not lexical.done():
                    lexical.set_result(ids)  # a read: COMMIT cannot change what it returned
                return ids

            lexical.run(self._run(namespace, leg, retry_safe=True, gucs=self._search_gucs()))
        return lexical, asyncio.ensure_future(self._query_vector(query, mode))

    async def _read_beside(self, namespace: str, read, lexical: _LexicalLeg | None,
                           embedding: asyncio.Task | None):
        """`read` in the search transaction, once the lexical leg holds its own connection
        (`_holding`); whatever `_prepare` started is cancelled or retrieved on the way out."""
        try:
            await _holding(lexical)
            return await self._run(namespace, read, retry_safe=True, gucs=self._search_gucs())
        finally:
            _abandon(lexical)
            _abandon(embedding)

    async def _plan_semantic(self, conn: psycopg.AsyncConnection, namespace: str, mode: str,
                             depth: int, filtered: bool) -> None:
        """Let the semantic leg take the HNSW index where the planner, misled by counting the
        namespace twice, would scan a mid-sized namespace's vectors one by one (the
        search.semantic_plan statement says when). Run while the query is embedded, so it
        costs a search no waiting. Not for a read filtered by kind or tag: the index would
        have to pass every vector without them, and the planner weighs the filter's
        selectivity (a rare tag's few vectors sorted exactly) where the rule cannot."""
        if mode != "lexical" and not filtered and self._model_ready():
            await conn.execute(q("search.semantic_plan"), {"namespace": namespace,
                                                           "depth": depth})

    async def _query_vector(self, query: str, mode: str) -> tuple[np.ndarray | None, bool]:
        """(vector or None, degraded). Semantic-only without a model is an error, not a silent
        empty answer: the caller asked for something this process cannot do right now."""
        if mode == "lexical":
            return None, False
        if not self._model_ready():
            state = self.embedder.status() if self.embedder is not None else {"state": "absent"}
            if mode == "semantic":
                raise Unavailable(
                    f"semantic search needs the embedding model, which is {state['state']}",
                    remedy="Use mode='hybrid' (degrades to lexical) or mode='lexical'; "
                           "'stats' shows the model's state.",
                    model_state=state["state"],
                )
            return None, True
        try:
            return await self.embedder.query_vector(query), False
        except Exception as exc:
            if mode == "semantic":
                raise Unavailable("the embedding model failed on this query") from exc
            logger.warning("query embedding failed; lexical only",
                           extra={"error": type(exc).__name__})
            return None, True

    async def _ranked(
        self,
        conn: psycopg.AsyncConnection,
        namespace: str,
        query: str,
        vector: Any,
        mode: str,
        kinds: list[str] | None,
        tags: list[str] | None,
        depth: int,
        lexical: asyncio.Future | None = None,
    ) -> list[dict[str, Any]]:
        """Run the legs the mode asks for and fuse them: [{id, score, why}], best first.
        `lexical`: the lexical leg already started elsewhere (hybrid), awaited after the
        semantic leg so the two run at the same time."""
        params = {"namespace": namespace, "kinds": kinds, "tags": tags, "depth": depth}
        legs: dict[str, list[Any]] = {}
        distances: dict[Any, float] = {}
        if mode == "lexical" or (mode == "hybrid" and lexical is None):
            legs["lexical"] = await self._lexical(conn, query, params)
        if mode in ("hybrid", "semantic") and vector is not None:
            cur = await conn.execute(q("search.semantic"), {
                **params, "embedding": vector, "model": self.embedder.model_name,
                "max_distance": self.settings.semantic_neighbour_max_distance},
                prepare=False)  # unnamed: planned for this vector (search_gucs)
            rows = await cur.fetchall()
            if lexical is not None:
                legs["lexical"] = await lexical
            # The gate decides whether the query is answerable at all, not how far each
            # neighbour may be: nothing near (and, in hybrid, no word matched) -> no semantic
            # results, rather than the nearest unrelated memories. Once answerable, the
            # neighbours up to the looser ceiling count; RRF ranks them by position.
            answerable = bool(rows) and (
                rows[0]["distance"] <= self.settings.semantic_max_distance
                or bool(legs.get("lexical")))
            if not answerable:
                rows = []
            legs["semantic"] = [r["id"] for r in rows]
            distances = {r["id"]: r["distance"] for r in rows}
        elif lexical is not None:
            legs["lexical"] = await lexical  # no vector: hybrid degraded to lexical
        fused = rrf(legs, self.settings.rrf_k)
        return [
            {
                "id": f.key,
                "score": f.score,
                "why": {
                    "lexical_rank": f.ranks.get("lexical"),
                    "semantic_rank": f.ranks.get("semantic"),
                    "distance": round(distances[f.key], 4) if f.key in distances else None,
                },
            }
            for f in fused
        ]

    async def _lexical(self, conn: psycopg.AsyncConnection, query: str,
                       params: dict[str, Any]) -> list[Any]:
        """The lexical leg's ids, best first (storage/lexical_leg.py)."""
        rows = await lexical_leg(conn, query, params, min_coverage=self.lexical_min_coverage,
                                 max_need=self.lexical_max_need, candidates=LEXICAL_CANDIDATES)
        return [r["id"] for r in rows]

    async def _materialise(
        self, conn: psycopg.AsyncConnection, namespace: str, ranked: list[dict[str, Any]],
        vectors_of: str | None = None,
    ) -> list[dict[str, Any]]:
        """The ranked rows re-read through stage 0: whole rows (memory_search), or, given
        `vectors_of` (a model name), what memory_context sends with each memory's current
        vector of that model, read in binary."""
        if not ranked:
            return []
        params = {"ids": [r["id"] for r in ranked], "namespace": namespace}
        if vectors_of is None:
            cur = await conn.execute(q("search.fetch_live"), params)
        else:
            cur = await conn.execute(q("search.fetch_live_context"),
                                     {**params, "model": vectors_of}, binary=True)
        rows = {row["id"]: row for row in await cur.fetchall()}
        return [{**r, "row": rows[r["id"]]} for r in ranked if r["id"] in rows]


def _pack_scored(scored: list[tuple[dict[str, Any], float]], vectors: dict[Any, Any],
                 budget_tokens: int) -> Packed:
    candidates = [
        Candidate(key=str(row["id"]), kind=row["kind"], item=context_item(row),
                  relevance=max(relevance, 1e-6), vector=_as_array(vectors.get(row["id"])))
        for row, relevance in scored
    ]
    return pack(candidates, budget_tokens)


def context_depth(budget_tokens: int) -> int:
    """Candidates per leg memory_context ranks for `budget_tokens` (CONTEXT_DEPTH_PER_1K_TOKENS)."""
    return min(max(math.ceil(CONTEXT_DEPTH_PER_1K_TOKENS * budget_tokens / 1000), MIN_LEG_DEPTH),
               MAX_LEG_DEPTH)


def context_item(row: dict[str, Any]) -> dict[str, Any]:
    """The compact form memory_context sends (and counts): what a model needs to use a memory
    and to cite or revise it; title and content travel as one untrusted-data block."""
    text = f"{row['title']}\n{row['content']}" if row["title"] else row["content"]
    return {"id": str(row["id"]), "kind": row["kind"], "revision": row["current_revision"],
            "text": wrap_untrusted(text)}


def search_gucs(ef_search: int) -> dict[str, str]:
    """Transaction-local settings of every search transaction (set with its scope):
    - hnsw.ef_search / iterative_scan: HNSW breadth, and iterative scans so filters applied
      after the index (stage 0, kinds, tags, namespace) still yield enough rows;
    - enable_seqscan off: a LIMIT makes a sequential scan look cheap to the planner, but it
      tests @@ on every row when matches are rare; the indexes always serve these reads.
    Plans: the statements whose best plan depends on their values (the lexical candidates:
    a tsquery's selectivity and the namespace's size decide between the GIN index and anything
    else, and a generic plan made for an average namespace searched a large one beside many
    small ones 1.6x slower, docs/perf.md; the semantic leg) are sent unnamed
    (`prepare=False`), which PostgreSQL always plans for the values given, and the level scans
    inside memhub_lexical_candidates are forced to (migration 0008). The others
    (the query's word statistics, re-reads by id) reuse a generic plan once psycopg has
    prepared them: planning the word-statistics statement anew cost ~0.9 ms a search."""
    return {
        "hnsw.ef_search": str(ef_search),
        "hnsw.iterative_scan": "relaxed_order",
        "enable_seqscan": "off",
    }


class _LexicalLeg(asyncio.Future):
    """The lexical leg's ids, resolved as soon as they are read, before the leg's read-only
    transaction commits. Its outcome is the transaction's when that ends first (an error, a
    cancellation); cancelling it cancels the transaction."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()  # set once the leg holds its pooled connection
        self.task: asyncio.Task | None = None

    def run(self, transaction: Awaitable[list[Any]]) -> None:
        self.task = asyncio.ensure_future(transaction)
        self.task.add_done_callback(self._settle)
        self.add_done_callback(lambda f: f.cancelled() and self.task.cancel())

    def _settle(self, task: asyncio.Task) -> None:
        if task.cancelled():
            if not self.done():
                self.cancel()
            return
        error = task.exception()  # retrieved either way: a failed COMMIT after the ids is moot
        if not self.done():
            if error is not None:
                self.set_exception(error)
            else:
                self.set_result(task.result())


async def _holding(lexical: _LexicalLeg | None) -> None:
    """Wait until the lexical leg holds its own pooled connection (or has finished). The
    caller's transaction will wait for the leg while holding a connection, so the leg must hold
    one first: with the pool exhausted, searches each holding one connection and queued for a
    second would wait on each other until the pool's timeout."""
    if lexical is None:
        return
    held = asyncio.ensure_future(lexical.holding.wait())
    try:
        await asyncio.wait({lexical, held}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        held.cancel()


def _abandon(task: asyncio.Future | None) -> None:
    """Stop waiting for a leg whose search failed or finished: cancel it if it is still
    running, and retrieve its outcome so an error nobody awaited is not logged as "never
    retrieved"."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    task.add_done_callback(lambda f: f.cancelled() or f.exception())


def _as_array(value: Any):
    if value is None:
        return None
    import numpy as np

    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value,
                      dtype=np.float32)
