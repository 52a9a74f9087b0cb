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


def texts(*sims: float, votes: int) -> dict:
    """A result's `why` for a question of len(sims) texts (the query and its phrasings)."""
    return {"distance": 1 - sims[0], "coverage": None, "sims": list(sims), "votes": votes}


def test_with_phrasings_a_close_memory_answers_only_when_two_texts_agree_on_it():
    close = SEMANTIC_FLOOR + 0.05
    alone = judge([texts(close, 0.3, 0.3, votes=1)], texts=3)
    agreed = judge([texts(close, 0.4, 0.3, votes=2)], texts=3)
    assert [v["admitted"] for v in alone] == [False]
    assert [v["level"] for v in agreed] == ["strong"]


def test_a_phrasing_closer_than_the_query_counts_as_the_question_s_meaning():
    [verdict] = judge([texts(0.2, SEMANTIC_FLOOR + 0.1, votes=2)], texts=2)
    assert verdict["level"] == "strong"


def test_what_completes_an_answer_below_the_floor_is_kept_and_marked_weak():
    verdicts = judge([why(similarity=0.8), why(similarity=0.8 * RELATIVE_CUT + 0.05)])
    assert [v["level"] for v in verdicts] == ["strong", "weak"]
    assert [v["admitted"] for v in verdicts] == [True, True]


def test_an_unanswered_question_marks_every_result_none():
    verdicts = judge([why(0.3), why(0.2)])
    assert [v["level"] for v in verdicts] == ["none", "none"]
