"""`SearchStore`: hybrid retrieval and context packing over PostgreSQL (a PostgresBackend mixin).

Every leg selects from `live_memories` inside a read transaction scoped (by RLS) to the
namespace, so stage 0 (ACTIVE, not expired) binds before anything is ranked, and the final rows
are re-read through the same view. Fusion is RRF over ranks (storage.fusion).

A hybrid search uses two transactions at once. The lexical leg (lexical_leg.py) starts
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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ....errors import Unavailable
from ...fusion import rrf
from ...memory_dicts import memory_dict
from ...principal import Principal, check_namespace
from ...retrieval_guard import QUESTION_PENALTY
from ...search import (
    MAX_LIMIT,
    Ask,
    check_ask,
    check_int,
    check_kinds,
    check_mode,
    check_tags,
)
from ..core import PgCore
from ..queries import q
from ..rows import Conn
from .lexical_leg import lexical_leg
from .ranking import best_of, centroid, judged
from .search_legs import LexicalLeg, abandon, holding

T = TypeVar("T")

if TYPE_CHECKING:
    import numpy as np


logger = logging.getLogger(__name__)

# How deep each leg ranks before fusion: deeper lists let RRF reward agreement between legs,
# and cost both legs work (the lexical levels stop at the depth; the semantic leg re-checks each
# neighbour through stage 0). 30 for the default limit of 10: measured against 50, 40, 25 and 20
# on SciFact (hybrid nDCG@10 at limit 10 within +-0.002 of each other, no trend) and the eval set
# (0.810-0.815), and ~1.1 ms faster end-to-end than 50 at 100k (docs/performance.md).
MIN_LEG_DEPTH = 30
MAX_LEG_DEPTH = 200
# A memory must match at least ceil(share x meaningful words) of the query's words to be a
# lexical hit (one- and two-word queries: one word; five words: two). Chosen by the same rule as
# the semantic gate in docs/evaluation.md (Threshold sweep).
LEXICAL_MIN_COVERAGE = 0.34
# ... but never more than two words: in a long question (a sentence, a claim) BM25 already ranks
# the memories sharing its rare words first, and asking for a third of twelve words drops
# relevant ones (SciFact, docs/performance.md). Queries of up to five words are unaffected.
LEXICAL_MAX_NEED = 2
# The lexical leg's bounded work (lexical_leg.py, docs/performance.md): the memories of the
# rarest words are read while their counts add up to at most this many, and each coverage level
# of the common words stops at this many (the levels together too, except when the every-word
# level is read after an overflowing one: then up to twice this, migration 0009); every
# candidate is then scored by BM25.
LEXICAL_CANDIDATES = 1000


class SearchStore(PgCore):
    lexical_min_coverage: float = LEXICAL_MIN_COVERAGE
    lexical_max_need: int = LEXICAL_MAX_NEED

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
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        """Hybrid (lexical + semantic, RRF-fused), lexical-only or semantic-only search. Each
        result carries the retrieval guard's verdict (`match`, storage/retrieval_guard.py);
        the nearest memories are ranked whether or not they answer. `also`: other phrasings
        of the query (docs/retrieval.md, Phrasings).

        Raises INVALID_INPUT (bounds: query 1-1000 chars, limit 1-100, known kinds, <= 32
        tags, also <= 4 of 300 chars), FORBIDDEN, UNAVAILABLE for mode='semantic' while the
        model is not ready. `hybrid` without a model degrades to lexical (degraded=true).
        """
        check_namespace(principal, namespace, write=False)
        ask = check_ask(query, also)
        limit = check_int(limit, "limit", 1, MAX_LIMIT)
        kinds, tags, mode = check_kinds(kinds), check_tags(tags), check_mode(mode)
        depth = min(max(2 * limit, MIN_LEG_DEPTH), MAX_LEG_DEPTH)
        lexical, embedding = self._prepare(namespace, ask, mode, kinds, tags, depth)

        async def read(conn: Conn) -> tuple[list[dict[str, Any]], bool]:
            await self._plan_semantic(conn, namespace, mode, depth, bool(kinds or tags))
            vectors, degraded = await embedding
            vector = centroid(vectors)
            ranked = await self._ranked(conn, namespace, ask, vector, mode, kinds, tags, depth,
                                        lexical)
            await self._text_similarities(
                conn, {"namespace": namespace, "kinds": kinds, "tags": tags}, ranked, vectors)
            return (await self._materialise(conn, namespace, ranked[:limit], vector=vector),
                    degraded)

        results, degraded = await self._read_beside(namespace, read, lexical, embedding)
        return {
            "results": judged(results, len(ask.texts), memory_dict),
            "mode": mode,
            "degraded": degraded,
        }

    # --- internals ------------------------------------------------------------------------
    def _search_gucs(self) -> dict[str, str]:
        return search_gucs(self.settings.hnsw_ef_search)

    def _prepare(
        self,
        namespace: str,
        ask: Ask,
        mode: str,
        kinds: list[str] | None,
        tags: list[str] | None,
        depth: int,
    ) -> tuple[LexicalLeg | None, asyncio.Task]:
        """Start what runs beside the caller's transaction: (the lexical leg, for `hybrid`;
        the question's embeddings -> (vectors or None, degraded)).

        The lexical leg runs in its own read transaction and resolves with its ids as soon as
        they are read (its COMMIT follows on its own); `_ranked` awaits it after the semantic
        leg. The caller opens its transaction at once (after `_holding`) and awaits the
        embedding inside it, so its round trips overlap the model instead of following it.
        Other modes have only one leg, which runs with the final read."""
        lexical = None
        if mode == "hybrid":
            params = {"namespace": namespace, "kinds": kinds, "tags": tags, "depth": depth}
            lexical = LexicalLeg()

            async def leg(conn: Conn) -> list[dict[str, Any]]:
                lexical.holding.set()
                rows = await self._lexical(conn, ask, params)
                if not lexical.done():
                    lexical.set_result(rows)  # a read: COMMIT cannot change what it returned
                return rows

            lexical.run(self._run(namespace, leg, retry_safe=True, gucs=self._search_gucs()))
        return lexical, asyncio.ensure_future(self._query_vectors(ask, mode))

    async def _read_beside(self, namespace: str, read: Callable[[Conn], Awaitable[T]],
                           lexical: LexicalLeg | None, embedding: asyncio.Task | None) -> T:
        """`read` in the search transaction, once the lexical leg holds its own connection
        (`_holding`); whatever `_prepare` started is cancelled or retrieved on the way out."""
        try:
            await holding(lexical)
            return await self._run(namespace, read, retry_safe=True, gucs=self._search_gucs())
        finally:
            abandon(lexical)
            abandon(embedding)

    async def _plan_semantic(self, conn: Conn, namespace: str, mode: str,
                             depth: int, filtered: bool) -> str | None:
        """Choose how the semantic leg reads the namespace's vectors, from its size now
        (search.semantic_plan): exactly below sqrt(2 x depth x the table's vectors), through
        the HNSW index above (left to the planner when `filtered` by kind or tag). Run while
        the query is embedded, so it costs a search no waiting. Returns the strategy ('exact',
        'index', 'planner'); None when there is no semantic leg."""
        if mode == "lexical" or not self._model_ready():
            return None
        cur = await conn.execute(q("search.semantic_plan"), {
            "namespace": namespace, "depth": depth, "filtered": filtered})
        row = await cur.fetchone()
        return row["strategy"] if row else None

    async def _query_vectors(self, ask: Ask, mode: str
                             ) -> tuple[list[np.ndarray] | None, bool]:
        """(the vectors of the question's texts, or None; degraded), embedded in one batch.
        Semantic-only without a model is an error, not a silent empty answer: the caller
        asked for something this process cannot do right now."""
        if mode == "lexical":
            return None, False
        embedder = self._ready_embedder()
        if embedder is None:
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
            if not ask.also:
                return [await embedder.query_vector(ask.query)], False
            return await embedder.query_vectors(list(ask.texts)), False
        except Exception as exc:
            if mode == "semantic":
                raise Unavailable("the embedding model failed on this query") from exc
            logger.warning("query embedding failed; lexical only",
                           extra={"error": type(exc).__name__})
            return None, True

    async def _ranked(
        self,
        conn: Conn,
        namespace: str,
        ask: Ask,
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
        lexical_rows: list[dict[str, Any]] = []
        semantic: list[Any] = []
        distances: dict[Any, float] = {}
        if mode == "lexical" or (mode == "hybrid" and lexical is None):
            lexical_rows = await self._lexical(conn, ask, params)
        if mode in ("hybrid", "semantic") and vector is not None:
            cur = await conn.execute(q("search.semantic"), {
                **params, "embedding": vector, "model": self._model_name(),
                "question_penalty": QUESTION_PENALTY},
                prepare=False)  # unnamed: planned for this vector (search_gucs)
            rows = await cur.fetchall()
            if lexical is not None:
                lexical_rows = await lexical
            semantic = [r["id"] for r in rows]
            distances = {r["id"]: r["distance"] for r in rows}
        elif lexical is not None:
            lexical_rows = await lexical  # no vector: hybrid degraded to lexical
        legs = {"lexical": [r["id"] for r in lexical_rows]} if mode != "semantic" else {}
        if mode != "lexical" and vector is not None:
            legs["semantic"] = semantic
        coverage = {r["id"]: r["coverage"] for r in lexical_rows}
        fused = rrf(legs, self.settings.rrf_k)
        return [
            {
                "id": f.key,
                "score": f.score,
                "why": {
                    "lexical_rank": f.ranks.get("lexical"),
                    "semantic_rank": f.ranks.get("semantic"),
                    "distance": round(distances[f.key], 4) if f.key in distances else None,
                    "coverage": round(coverage[f.key], 4) if f.key in coverage else None,
                },
            }
            for f in fused
        ]

    async def _lexical(self, conn: Conn, ask: Ask,
                       params: dict[str, Any]) -> list[dict[str, Any]]:
        """The lexical leg's [{id, rank, coverage}], best first: the memories' own words and
        their questions' as one list, each memory at the better of its two places
        (ranking.best_of; storage/postgres/retrieval/lexical_leg.py)."""
        own, asked = await lexical_leg(
            conn, ask.words, params, primary=ask.query, min_coverage=self.lexical_min_coverage,
            max_need=self.lexical_max_need, candidates=LEXICAL_CANDIDATES, questions=True)
        return best_of(own, asked, params["depth"])

    async def _text_similarities(self, conn: Conn, params: dict[str, Any],
                                 ranked: list[dict[str, Any]],
                                 vectors: list[Any] | None) -> None:
        """Fill each ranked result's `why.sims` (its similarity to each text of the question)
        and `why.votes` (for how many texts it is the namespace's nearest memory): what the
        retrieval guard reads (storage/retrieval_guard.py). `params`: namespace, kinds, tags.
        Nothing without vectors."""
        if not vectors or not ranked:
            return
        shared = {"namespace": params["namespace"], "model": self._model_name(),
                  "vectors": vectors, "question_penalty": QUESTION_PENALTY}
        cur = await conn.execute(q("search.text_similarities"),
                                 {**shared, "ids": [r["id"] for r in ranked]})
        sims = {row["id"]: [round(s, 4) for s in row["sims"]] for row in await cur.fetchall()}
        cur = await conn.execute(q("search.nearest_per_text"), {
            **shared, "kinds": params.get("kinds"), "tags": params.get("tags")},
            prepare=False)  # unnamed: planned for these vectors (search_gucs)
        votes: dict[Any, int] = {}
        for row in await cur.fetchall():
            votes[row["id"]] = votes.get(row["id"], 0) + 1
        for r in ranked:
            r["why"]["sims"] = sims.get(r["id"])
            r["why"]["votes"] = votes.get(r["id"], 0) if r["id"] in sims else None

    async def _materialise(
        self, conn: Conn, namespace: str, ranked: list[dict[str, Any]],
        vectors_of: str | None = None, vector: Any = None,
    ) -> list[dict[str, Any]]:
        """The ranked rows re-read through stage 0: whole rows (memory_search), or, given
        `vectors_of` (a model name), what memory_context sends with each memory's current
        vector of that model, read in binary. Given the query's `vector`, each result's
        `why.distance` is filled in where the semantic leg did not rank it."""
        if not ranked:
            return []
        params = {"ids": [r["id"] for r in ranked], "namespace": namespace}
        if vectors_of is not None:
            cur = await conn.execute(q("search.fetch_live_context"),
                                     {**params, "model": vectors_of, "embedding": vector},
                                     binary=True)
        elif vector is not None:
            cur = await conn.execute(q("search.fetch_live_scored"), {
                **params, "model": self._model_name(), "embedding": vector})
        else:
            cur = await conn.execute(q("search.fetch_live"), params)
        rows = {row["id"]: row for row in await cur.fetchall()}
        out = []
        for r in ranked:
            row = rows.get(r["id"])
            if row is None:
                continue
            if r["why"]["distance"] is None and row.get("distance") is not None:
                r["why"]["distance"] = round(row["distance"], 4)
            out.append({**r, "row": row})
        return out


def search_gucs(ef_search: int) -> dict[str, str]:
    """Transaction-local settings of every search transaction (set with its scope):
    - hnsw.ef_search / iterative_scan: HNSW breadth, and iterative scans so filters applied
      after the index (stage 0, kinds, tags, namespace) still yield enough rows;
    - enable_seqscan off: a LIMIT makes a sequential scan look cheap to the planner, but it
      tests @@ on every row when matches are rare; the indexes always serve these reads.
    Plans: the statements whose best plan depends on their values (the lexical candidates:
    a tsquery's selectivity and the namespace's size decide between the GIN index and anything
    else, and a generic plan made for an average namespace searched a large one beside many
    small ones 1.6x slower, docs/performance.md; the semantic leg) are sent unnamed
    (`prepare=False`), which PostgreSQL always plans for the values given, and the level scans
    inside memhub_lexical_candidates are forced to (migration 0008). The others
    (the query's word statistics, re-reads by id) reuse a generic plan once psycopg has
    prepared them: planning the word-statistics statement anew cost ~0.9 ms a search."""
    return {
        "hnsw.ef_search": str(ef_search),
        "hnsw.iterative_scan": "relaxed_order",
        "enable_seqscan": "off",
    }
