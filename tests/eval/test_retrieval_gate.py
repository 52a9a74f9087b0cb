"""The retrieval gate: the hand-graded set through the real write and search paths, compared
with the committed baseline (docs/eval/baseline.json, written by bench/eval_retrieval.py).

Fails on ANY stale leak, and on a drop beyond the margin: MARGIN (0.02 absolute) for each mode's
overall nDCG@10, recall@10, MRR and abstain share; TYPE_MARGIN (0.05) for each query type's
nDCG@10 (8-10 queries per type, so one query moving a rank moves the mean a few points)."""

from __future__ import annotations

import json

import pytest

from bench.eval_retrieval import BASELINE, MARGIN, MODES, TYPES, evaluate_all
from bench.eval_set import prepare
from tests.conftest import make_settings
from tests.support.retrieval import embedder

__all__ = ["embedder"]

pytestmark = pytest.mark.slow
TYPE_MARGIN = 0.05
GATED = ("ndcg@10", "recall@10", "mrr", "abstain")


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


@pytest.mark.parametrize("mode", MODES)
def test_no_query_in_any_mode_returns_a_superseded_or_expired_memory(results, mode):
    assert results[mode]["leaks"] == []
    assert results[mode]["overall"]["stale_leaks"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_overall_quality_does_not_regress_beyond_the_margin(results, baseline, mode):
    now, then = results[mode]["overall"], baseline[mode]["overall"]
    drops = {m: (then[m], now[m]) for m in GATED if now[m] < then[m] - MARGIN}
    assert not drops, f"{mode}: (baseline, now) beyond -{MARGIN}: {drops}"


@pytest.mark.parametrize("mode", MODES)
def test_no_query_type_regresses_beyond_its_margin(results, baseline, mode):
    drops = {}
    for qtype in TYPES:
        key = "abstain" if qtype == "unanswerable" else "ndcg@10"
        now = results[mode]["by_type"][qtype][key]
        then = baseline[mode]["by_type"][qtype][key]
        if now < then - TYPE_MARGIN:
            drops[qtype] = (then, now)
    assert not drops, f"{mode}: (baseline, now) beyond -{TYPE_MARGIN}: {drops}"


def test_hybrid_beats_each_leg_alone(results):
    hybrid = results["hybrid"]["overall"]["ndcg@10"]
    assert hybrid > results["lexical"]["overall"]["ndcg@10"]
    assert hybrid > results["semantic"]["overall"]["ndcg@10"]
