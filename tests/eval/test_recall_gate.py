"""The recall evaluation (bench/eval_recall.py): questions the corpus cannot answer get nothing
from `recall`, while the answerable ones memory_search answers keep a relevant memory, without
and with what the calling model adds (its phrasings of the question; the questions each
memory answers), with the embedding model and without it (lexical only).

Targets are asserted as written where they are met (kept >= 95% with phrasings and questions;
abstain >= 75% without phrasings, and on the graded set's and the probe set's unanswerable
questions). Where no rule over this model's signals meets one (docs/evaluation.md, "Recall:
questions with no answer": near-topic questions sit where their topic's memory is close in
meaning), the figure measured today is held instead, about 0.03 below it, so a change that
makes it worse fails."""

from __future__ import annotations

import pytest

from bench.eval_recall import TARGET_ABSTAIN, TARGET_KEPT, evaluate_recall
from bench.eval_set import prepare
from tests.conftest import make_settings
from tests.support.retrieval import embedder

__all__ = ["embedder"]

pytestmark = pytest.mark.slow
# Measured on 2026-12-06 (docs/evaluation.md), less about 0.03.
KEPT_FLOOR = {"plain": 0.56, "also": 0.85, "also+questions": TARGET_KEPT}
ABSTAIN_FLOOR = {"plain": TARGET_ABSTAIN, "also": 0.73, "also+questions": 0.69}
LEXICAL_KEPT_FLOOR = 0.66


@pytest.fixture(scope="module")
async def results(module_dsn, embedder, tmp_path_factory):
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("recall-eval"))
    env = await prepare(module_dsn, settings)
    try:
        yield await evaluate_recall(env)
    finally:
        await env.backend.close()


@pytest.mark.parametrize("aid", list(KEPT_FLOOR))
def test_recall_keeps_a_relevant_answer_where_memory_search_finds_one(results, aid):
    assert results["model"][aid]["kept"] >= KEPT_FLOOR[aid], results["model"][aid]


@pytest.mark.parametrize("aid", list(ABSTAIN_FLOOR))
def test_recall_answers_nothing_for_most_unanswerable_questions(results, aid):
    assert results["model"][aid]["abstain_all"] >= ABSTAIN_FLOOR[aid], results["model"][aid]


@pytest.mark.parametrize("aid", list(ABSTAIN_FLOOR))
def test_recall_answers_nothing_for_the_unanswerable_queries_of_the_graded_set(results, aid):
    assert results["model"][aid]["abstain"]["eval"] >= TARGET_ABSTAIN, results["model"][aid]


def test_without_a_model_words_alone_keep_most_answers_and_abstain(results):
    side = results["lexical_only"]["plain"]
    assert side["kept"] >= LEXICAL_KEPT_FLOOR and side["abstain_all"] >= TARGET_ABSTAIN, side


def test_the_similarity_floor_is_where_the_model_puts_1_in_1000_non_answering_pairs(results):
    """A new model or a changed corpus moves the distribution: re-derive the floor then."""
    from memhub.storage.retrieval_guard import SEMANTIC_FLOOR

    assert abs(results["calibration"]["p99.9"] - SEMANTIC_FLOOR) <= 0.01, results["calibration"]
