"""memory_search always ranks: the semantic leg returns the nearest live memories however far
they are, and whether they answer is the retrieval guard's verdict on each result
(storage/retrieval_guard.py), never an empty list. A question near nothing still gets the
project's nearest memories, each marked `none`; `recall` (the guard applied) answers nothing."""

from __future__ import annotations

import pytest

from tests.conftest import make_settings
from tests.support.retrieval import WRITER, drain, embedder, open_backend

__all__ = ["embedder"]

NS = "gate"
MEMORIES = [
    "Ledger amounts are stored as integer minor units, never floats.",
    "Payouts to merchants run daily at 06:00 UTC from the settlement account.",
    "Refunds are allowed within 180 days of the original charge.",
    "Card numbers are tokenised by the vault before they reach our services.",
    "The on-call engineer is paged by PagerDuty when the error budget burns fast.",
]
FAR = "best pizza toppings in Naples"


@pytest.fixture
async def backend(db_dsn, tmp_path, embedder):
    async with open_backend(make_settings(db_dsn, tmp_path), embedder) as backend:
        for content in MEMORIES:
            await backend.remember(WRITER, NS, content=content)
        await drain(backend, embedder)
        yield backend


async def search(backend, query: str, mode: str, **kw) -> list[dict]:
    return (await backend.search(WRITER, NS, query, limit=10, mode=mode, **kw))["results"]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
async def test_a_query_near_nothing_still_gets_the_nearest_memories_marked_none(backend, mode):
    hits = await search(backend, FAR, mode)
    assert len(hits) == len(MEMORIES)
    assert {h["match"]["level"] for h in hits} == {"none"}
    assert not (await backend.recall(WRITER, NS, FAR))["results"]


async def test_the_nearest_come_first_however_far(backend):
    hits = await search(backend, MEMORIES[0], "semantic")
    distances = [h["why"]["distance"] for h in hits]
    assert distances == sorted(distances)
    assert distances[-1] > 0.6  # far neighbours are ranked, not cut
    assert hits[0]["match"]["level"] == "strong"


async def test_phrasings_of_a_near_nothing_question_still_get_ranked_answers(backend):
    hits = await search(backend, FAR, "hybrid",
                        also=["Neapolitan pizza recipes", "what goes on a pizza margherita"])
    assert len(hits) == len(MEMORIES)
    assert {h["match"]["level"] for h in hits} == {"none"}
