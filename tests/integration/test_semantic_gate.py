"""The semantic gate decides whether a query is answerable, not how far each neighbour may be
(storage/postgres/retrieval/search.py): nothing within MEMHUB_SEMANTIC_MAX_DISTANCE (and, in hybrid,
no word matched) -> no semantic results; otherwise the neighbours up to
MEMHUB_SEMANTIC_NEIGHBOUR_MAX_DISTANCE count. The gate is set very strict here (0.2) so which side
of it a query falls on does not depend on the model's exact geometry."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings
from tests.support.retrieval import WRITER, drain, embedder, open_backend

__all__ = ["embedder"]

NS = "gate"
GATE, CEILING = 0.2, 1.0
MEMORIES = [
    "Ledger amounts are stored as integer minor units, never floats.",
    "Payouts to merchants run daily at 06:00 UTC from the settlement account.",
    "Refunds are allowed within 180 days of the original charge.",
    "Card numbers are tokenised by the vault before they reach our services.",
    "The on-call engineer is paged by PagerDuty when the error budget burns fast.",
]


@pytest.fixture
async def backend(db_dsn, tmp_path, embedder):
    settings = make_settings(db_dsn, tmp_path, semantic_max_distance=GATE,
                             semantic_neighbour_max_distance=CEILING)
    async with open_backend(settings, embedder) as backend:
        for content in MEMORIES:
            await backend.remember(WRITER, NS, content=content)
        await drain(backend, embedder)
        yield backend


async def search(backend, query: str, mode: str) -> list[dict]:
    return (await backend.search(WRITER, NS, query, limit=10, mode=mode))["results"]


async def test_a_query_near_nothing_gets_no_neighbours(backend):
    assert await search(backend, "best pizza toppings in Naples", "semantic") == []
    assert await search(backend, "best pizza toppings in Naples", "hybrid") == []


async def test_an_answerable_query_brings_neighbours_beyond_the_gate(backend):
    """The exact text of a memory is within the gate, so the query is answerable: its other
    neighbours count although they are farther than the gate (never beyond the ceiling)."""
    hits = await search(backend, MEMORIES[0], "semantic")
    distances = [h["why"]["distance"] for h in hits]
    assert distances[0] <= GATE
    assert len(hits) > 1 and max(distances) > GATE and max(distances) <= CEILING


async def test_in_hybrid_a_word_match_makes_the_query_answerable(backend):
    """"ledger" matches a memory's word (one of two is enough); no memory is within the gate of
    the whole query. The semantic leg then contributes neighbours the words alone would not
    have found."""
    query = "ledger pizza"
    assert await search(backend, query, "semantic") == []
    hits = await search(backend, query, "hybrid")
    assert hits[0]["why"]["lexical_rank"] == 1
    semantic_only = [h for h in hits if h["why"]["lexical_rank"] is None]
    assert semantic_only and all(GATE < h["why"]["distance"] <= CEILING for h in semantic_only)
