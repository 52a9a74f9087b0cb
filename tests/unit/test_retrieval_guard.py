"""The retrieval guard's rule (storage/retrieval_guard.py), on the signals alone."""

from __future__ import annotations

from memhub.storage.retrieval_guard import (
    LEXICAL_FLOOR,
    RELATIVE_CUT,
    SEMANTIC_FLOOR,
    evidence,
    judge,
    rejected_reasons,
)


def why(similarity: float | None = None, coverage: float | None = None) -> dict:
    return {"distance": None if similarity is None else 1 - similarity, "coverage": coverage}


def test_a_result_close_in_meaning_is_a_match():
    [verdict] = judge([why(similarity=SEMANTIC_FLOOR + 0.01)])
    assert verdict["admitted"] and verdict["reason"] == "match"


def test_a_result_holding_most_of_the_querys_words_is_a_match_without_any_vector():
    [verdict] = judge([why(coverage=LEXICAL_FLOOR)])
    assert verdict["admitted"] and verdict["reason"] == "match"


def test_when_the_best_result_is_below_both_floors_nothing_is_admitted():
    verdicts = judge([why(SEMANTIC_FLOOR - 0.01, LEXICAL_FLOOR - 0.01), why(0.3, 0.5)])
    assert [v["reason"] for v in verdicts] == ["no_match", "no_match"]
    assert not any(v["admitted"] for v in verdicts)


def test_results_of_the_same_order_as_an_admitted_best_ride_along_and_the_tail_does_not():
    best = why(similarity=0.8)
    near = why(similarity=0.8 * RELATIVE_CUT + 0.05)
    far = why(similarity=0.8 * RELATIVE_CUT - 0.05)
    verdicts = judge([best, near, far])
    assert [v["reason"] for v in verdicts] == ["match", "near_best", "far_from_best"]
    assert [v["admitted"] for v in verdicts] == [True, True, False]
    assert rejected_reasons(verdicts) == {"far_from_best": 1}


def test_a_result_without_signals_has_no_evidence_and_no_results_give_no_verdicts():
    assert evidence(why()) == 0.0
    assert judge([]) == []


def test_evidence_is_the_stronger_signal_against_its_own_floor():
    assert evidence(why(SEMANTIC_FLOOR, LEXICAL_FLOOR / 2)) == 1.0
    assert evidence(why(SEMANTIC_FLOOR / 2, LEXICAL_FLOOR)) == 1.0
