"""`AsOfStore`: memory_search and memory_context as of a past time (a PostgresBackend mixin
over `ContextStore`; storage/as_of.py, as_of.sql, docs/retrieval.md, As of a date).

Every read selects from memhub_memories_as_of (migration 0045): stage 0 said of that time, each
memory at the revision it had then, so no other revision's text can be ranked or returned.
The legs are the present ones said of then: BM25 over the words of each memory's revision then
(with the namespace's word statistics of now), and cosine distance where the memory's stored
vector is of that same text (a memory keeps the vector of its last revision only). Fusion and
the retrieval guard are the present ones. One transaction, no second connection: a past read
is rare, and its cost is the scan of the namespace's memories as they were
(docs/performance.md, As of a date).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from ...as_of import memory_then
from ...fusion import rrf
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...retrieval_guard import judge
from ...search import (
    MAX_BUDGET_TOKENS,
    MAX_LIMIT,
    Ask,
    check_ask,
    check_int,
    check_kinds,
    check_mode,
    check_query,
    check_tags,
)
from ..memories.as_of_reads import check_past
from ..memories.profiles import context_quota
from ..queries import q
from ..rows import Conn, many
from .context import (
    CONTEXT_RECENT_DEPTH,
    ContextStore,
    context_answer,
    context_depth,
    pack_scored,
)
from .lexical_leg import any_of
from .ranking import centroid, judged
from .search import MAX_LEG_DEPTH, MIN_LEG_DEPTH
from .search_legs import abandon


class AsOfStore(ContextStore):
    """Implements the ranked half of `AsOfBackend`."""

    async def search_as_of(
        self, principal: Principal, namespace: str, query: str, as_of: datetime, *,
        limit: int = 10, kinds: list[str] | None = None, tags: list[str] | None = None,
        mode: str = "hybrid", also: list[str] | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        ask = check_ask(query, also)
        limit = check_int(limit, "limit", 1, MAX_LIMIT)
        kinds, tags, mode = check_kinds(kinds), check_tags(tags), check_mode(mode)
        params = {"namespace": namespace, "as_of": as_of, "kinds": kinds, "tags": tags,
                  "depth": min(max(2 * limit, MIN_LEG_DEPTH), MAX_LEG_DEPTH)}
        embedding = asyncio.ensure_future(self._query_vectors(ask, mode))

        async def read(conn: Conn) -> tuple[list[dict[str, Any]], bool]:
            await check_past(conn, as_of)
            ranked, degraded = await self._ranked_then(conn, ask, mode, params, embedding)
            ranked = ranked[:limit]
            rows = {r["id"]: r for r in await many(conn, "as_of.fetch", {
                **params, "ids": [r["id"] for r in ranked]})}
            return [{**r, "row": rows[r["id"]]} for r in ranked if r["id"] in rows], degraded

        try:
            results, degraded = await self._run(namespace, read, retry_safe=True)
        finally:
            abandon(embedding)
        return {
            "results": judged(results, len(ask.texts), memory_then),
            "mode": mode,
            "degraded": degraded,
            "as_of": iso(as_of),
        }

    async def context_as_of(
        self, principal: Principal, namespace: str, query: str | None, as_of: datetime, *,
        budget_tokens: int = 2000, kinds: list[str] | None = None,
        also: list[str] | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        query = check_query(query, required=False)
        ask = check_ask(query, also) if query is not None else None
        budget_tokens = check_int(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        kinds = check_kinds(kinds)
        params = {"namespace": namespace, "as_of": as_of, "kinds": kinds, "tags": None,
                  "depth": context_depth(budget_tokens)}
        embedding = (asyncio.ensure_future(self._query_vectors(ask, "hybrid"))
                     if ask is not None else None)
        rejected = [0]

        async def read(conn: Conn) -> tuple[list[tuple[dict[str, Any], float]],
                                            dict[Any, Any], bool, dict[str, float] | None]:
            await check_past(conn, as_of)
            if ask is not None and embedding is not None:
                ranked, degraded = await self._ranked_then(conn, ask, "hybrid", params,
                                                           embedding)
                # As the present memory_context: the budget goes to matches only.
                verdicts = judge([r["why"] for r in ranked], texts=len(ask.texts))
                rejected[0] = sum(1 for v in verdicts if not v["admitted"])
                ranked = [r for r, v in zip(ranked, verdicts, strict=True) if v["admitted"]]
                cur = await conn.execute(q("as_of.fetch_context"), {
                    **params, "model": "" if degraded else self._model_name(),
                    "ids": [r["id"] for r in ranked]}, binary=True)
                rows = {row["id"]: row for row in await cur.fetchall()}
                top = max((r["score"] for r in ranked), default=1.0)
                scored = [(rows[r["id"]], r["score"] / top) for r in ranked if r["id"] in rows]
            else:
                degraded = not self._model_ready()
                cur = await conn.execute(q("as_of.context_recent"), {
                    **params, "depth": CONTEXT_RECENT_DEPTH,
                    "model": "" if degraded else self._model_name()}, binary=True)
                # Newer is more useful, gently, as the present memory_context weighs it.
                scored = [(row, 1.0 / (1.0 + i / 25))
                          for i, row in enumerate(await cur.fetchall())]
            vectors = {row["id"]: row["embedding"] for row, _ in scored
                       if row["embedding"] is not None}
            return scored, vectors, degraded, await context_quota(conn, namespace)

        try:
            scored, vectors, degraded, quota = await self._run(namespace, read,
                                                               retry_safe=True)
        finally:
            abandon(embedding)
        packed = await asyncio.to_thread(pack_scored, scored, vectors, budget_tokens, quota)
        return {**context_answer(packed, budget_tokens, rejected[0], degraded),
                "as_of": iso(as_of)}

    async def _ranked_then(self, conn: Conn, ask: Ask, mode: str, params: dict[str, Any],
                           embedding: asyncio.Future) -> tuple[list[dict[str, Any]], bool]:
        """The legs `mode` asks for over the memories current at params["as_of"], fused:
        ([{id, score, why}] best first, degraded). `why` holds what the retrieval guard reads
        (sims and votes from the vectors the semantic leg may compare)."""
        lexical = [] if mode == "semantic" else await self._lexical_then(conn, ask, params)
        vectors, degraded = await embedding
        semantic: dict[Any, dict[str, Any]] = {}
        if mode != "lexical" and vectors:
            cur = await conn.execute(q("as_of.semantic"), {
                **params, "embedding": centroid(vectors), "vectors": vectors,
                "model": self._model_name(), "ids": [r["id"] for r in lexical]},
                prepare=False)  # unnamed: planned for these vectors
            semantic = {row["id"]: row for row in await cur.fetchall()}
        legs = {"lexical": [r["id"] for r in lexical]} if mode != "semantic" else {}
        if mode != "lexical" and vectors:
            legs["semantic"] = [i for i, row in semantic.items()
                                if row["place"] <= params["depth"]]
        coverage = {r["id"]: r["coverage"] for r in lexical}
        ranked = []
        for f in rrf(legs, self.settings.rrf_k):
            near = semantic.get(f.key)
            ranked.append({"id": f.key, "score": f.score, "why": {
                "lexical_rank": f.ranks.get("lexical"),
                "semantic_rank": f.ranks.get("semantic"),
                "distance": round(near["distance"], 4) if near else None,
                "coverage": round(coverage[f.key], 4) if f.key in coverage else None,
                "sims": [round(s, 4) for s in near["sims"]] if near else None,
                "votes": near["votes"] if near else None,
            }})
        return ranked, degraded

    async def _lexical_then(self, conn: Conn, ask: Ask,
                            params: dict[str, Any]) -> list[dict[str, Any]]:
        """The lexical leg as of then: [{id, matched, rank, coverage}], best first. The query's
        words, their statistics and the coverage floor are the present leg's
        (search.lexical_terms, lexical_leg.py)."""
        cur = await conn.execute(q("search.lexical_terms"), {
            "query": ask.words, "min_coverage": self.lexical_min_coverage,
            "max_need": self.lexical_max_need, "namespace": params["namespace"],
            "primary": ask.query})
        words = await cur.fetchone()
        if words is None or not words["terms"]:
            return []  # only stopwords: nothing to match on
        idf = words["idf"]
        primary_terms = max(1, words["primary_terms"] or len(words["terms"]))
        cur = await conn.execute(q("as_of.lexical"), {
            **params, "need": words["need"], "lexemes": words["lexemes"],
            "term_of": words["term_of"], "idf": idf, "primary_terms": primary_terms,
            "idf_primary": sum(idf[:primary_terms]) or 1.0,
            "avg_length": words["avg_length"], "any": any_of(words["terms"])},
            prepare=False)  # unnamed: planned for these words
        return await cur.fetchall()
