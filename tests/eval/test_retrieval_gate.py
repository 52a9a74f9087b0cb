"""The retrieval gate: the hand-graded set through the real write and search paths, without and
with what the calling model adds (the queries' other phrasings, the questions each memory
answers), compared with the committed baseline (docs/eval/baseline.json, written by
bench/eval_retrieval.py).

Fails on ANY stale leak in any mode or aid; on a drop beyond the margin: MARGIN (0.02
absolute) for each mode's overall nDCG@10, recall@10 and MRR; TYPE_MARGIN (0.05) for each
query type's nDCG@10 (8-10 queries per type, so one query moving a rank moves the mean a few
points); and when stored questions lower any query type (they may only add a way to be
found)."""

from __future__ import annotations

import json

import pytest

from bench.eval_retrieval import ANSWERABLE_TYPES, BASELINE, MARGIN, MODES, VARIANTS, evaluate_all
from bench.eval_set import prepare
from tests.conftest import make_settings
from tests.support.retrieval import embedder

__all__ = ["embedder"]

pytestmark = pytest.mark.slow
TYPE_MARGIN = 0.05
# Questions must not lower a query type; one query moving a rank moves a type's mean this much.
QUESTION_MARGIN = 0.02
GATED = ("ndcg@10", "recall@10", "mrr")
CASES = [(variant, mode) for variant in VARIANTS for mode in MODES]


@pytest.fixture(scope="module")
async def results(module_dsn, embedder, tmp_path_factory):
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("eval"))
    env = await prepare(module_dsn, settings)
    try:
        yield await evaluate_all(env)
    finally:
        await env.backend.close()


@pytest.fixture(scope="module")
def baseline():
    return json.loads(BASELINE.read_text())


@pytest.mark.parametrize(("variant", "mode"), CASES)
def test_no_query_returns_a_superseded_or_expired_memory(results, variant, mode):
    assert results[variant][mode]["leaks"] == []
    assert results[variant][mode]["overall"]["stale_leaks"] == 0


@pytest.mark.parametrize(("variant", "mode"), CASES)
def test_overall_quality_does_not_regress_beyond_the_margin(results, baseline, variant, mode):
    now, then = results[variant][mode]["overall"], baseline[variant][mode]["overall"]
    drops = {m: (then[m], now[m]) for m in GATED if now[m] < then[m] - MARGIN}
    assert not drops, f"{variant} {mode}: (baseline, now) beyond -{MARGIN}: {drops}"


@pytest.mark.parametrize(("variant", "mode"), CASES)
def test_no_query_type_regresses_beyond_its_margin(results, baseline, variant, mode):
    drops = {}
    for qtype in ANSWERABLE_TYPES:
        now = results[variant][mode]["by_type"][qtype]["ndcg@10"]
        then = baseline[variant][mode]["by_type"][qtype]["ndcg@10"]
        if now < then - TYPE_MARGIN:
            drops[qtype] = (then, now)
    assert not drops, f"{variant} {mode}: (baseline, now) beyond -{TYPE_MARGIN}: {drops}"


@pytest.mark.parametrize("with_phrasings", [False, True])
def test_stored_questions_lower_no_query_type(results, with_phrasings):
    plain, asked = (("also", "also+questions") if with_phrasings
                    else ("plain", "questions"))
    lower = {}
    for qtype in ANSWERABLE_TYPES:
        before = results[plain]["hybrid"]["by_type"][qtype]["ndcg@10"]
        after = results[asked]["hybrid"]["by_type"][qtype]["ndcg@10"]
        if after < before - QUESTION_MARGIN:
            lower[qtype] = (before, after)
    assert not lower, lower


def test_phrasings_and_questions_each_raise_hybrid_quality(results):
    ndcg = {v: results[v]["hybrid"]["overall"]["ndcg@10"] for v in VARIANTS}
    assert ndcg["also"] > ndcg["plain"] and ndcg["questions"] > ndcg["plain"]
    assert ndcg["also+questions"] >= max(ndcg["also"], ndcg["questions"])


def test_hybrid_beats_each_leg_alone(results):
    plain = results["plain"]
    hybrid = plain["hybrid"]["overall"]["ndcg@10"]
    assert hybrid > plain["lexical"]["overall"]["ndcg@10"]
    assert hybrid > plain["semantic"]["overall"]["ndcg@10"]
