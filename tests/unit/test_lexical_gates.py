"""The lexical leg's candidate gates: the rare words, and coverage levels over the others
(storage/postgres/retrieval/lexical_leg.py). PostgreSQL's reading of them and the leg's answers are
checked in tests/integration/test_lexical_index.py."""

from __future__ import annotations

import itertools
import math

import pytest

from memhub.storage.postgres.retrieval.lexical_leg import (
    MAX_WORD_TESTS,
    any_of,
    at_least,
    coverage_levels,
    rarest,
)


def test_the_rarest_words_are_taken_until_their_memories_fill_the_budget():
    df = [400.0, 3.0, 90.0, 12.0, 700.0]
    assert rarest(df, 1000) == [0, 1, 2, 3]        # 3 + 12 + 90 + 400 = 505; +700 is over
    assert rarest(df, 105) == [1, 2, 3]            # query order, not rarity order
    assert rarest(df, 100) == [1, 3]


def test_no_word_is_rare_when_even_the_rarest_is_over_the_budget():
    assert rarest([5000.0, 2500.0], 1000) == []


def test_without_statistics_every_word_counts_as_rare():
    assert rarest([1.0] * 12, 1000) == list(range(12))


def test_gates_are_tsquery_text():
    terms = ["'redis'", "'jwt' | 'jwts'"]
    assert any_of(terms) == "( 'redis' ) | ( 'jwt' | 'jwts' )"
    assert at_least(terms, 2) == "( ( 'redis' ) & ( 'jwt' | 'jwts' ) )"


def _floors(n: int, need: int) -> list[int]:
    return [floor for _, floor in coverage_levels([f"'w{i}'" for i in range(n)], need)]


def test_short_queries_climb_one_exact_level_at_a_time():
    terms = ["'a'", "'b'", "'c'", "'d'", "'e'"]
    levels = coverage_levels(terms, 2)
    assert [floor for _, floor in levels] == [2, 3, 4, 5]
    assert levels[0][0] == at_least(terms, 2)
    assert levels[-1][0] == "( ( 'a' ) & ( 'b' ) & ( 'c' ) & ( 'd' ) & ( 'e' ) )"
    assert [g.count(" | ") + 1 for g, _ in levels] == [10, 10, 5, 1]


def test_long_queries_start_from_an_affordable_superset_and_skip_the_middle():
    terms = [f"'w{i}'" for i in range(12)]
    levels = coverage_levels(terms, 5)
    # "at least 5 of 12" is 792 combinations; "at least 2" (66 pairs, 132 word tests) is the
    # first gate, still counted from 5; 6..10 are over budget, 11 and 12 are not.
    assert levels[0] == (at_least(terms, 2), 5)
    assert [floor for _, floor in levels] == [5, 11, 12]
    assert _floors(8, 3) == [3, 6, 7, 8]            # 4 and 5 of 8 cost 280 word tests


@pytest.mark.parametrize("n", [1, 2, 6, 7, 20, 64])
def test_every_plan_starts_at_need_and_stays_bounded(n):
    terms = [f"'w{i}'" for i in range(n)]
    need = max(1, math.ceil(n * 0.34))
    levels = coverage_levels(terms, need)
    floors = [floor for _, floor in levels]
    assert floors[0] == need and floors == sorted(set(floors))
    assert all(g.count("'w") <= max(MAX_WORD_TESTS, n) for g, _ in levels)


def test_fewer_common_words_than_needed_means_no_levels():
    # Two words must be held; a memory holding neither rare word can hold at most one.
    assert coverage_levels(["'a'"], 2) == []
    assert coverage_levels([], 1) == []
    with pytest.raises(ValueError):
        at_least(["'a'"], 2)


def _holds(gate: str, words: set[str]) -> bool:
    """Evaluate a gate built from one-lexeme terms against a memory's set of words."""
    expr = gate.replace("&", " and ").replace("|", " or ")
    for word in "abcdefg":
        expr = expr.replace(f"'{word}'", str(word in words))
    return eval(expr)  # noqa: S307 - only True/False/and/or/parentheses remain


def test_a_middle_level_is_read_anchor_first_and_its_two_parts_are_the_whole_level():
    terms = ["'a'", "'b'", "'c'", "'d'", "'e'"]
    levels = coverage_levels(terms, 2, anchor=3)
    assert [floor for _, floor in levels] == [2, 3, 3, 4, 4, 5]
    # Read in reverse: every word, then for 4 and 3 words the memories holding 'd' first.
    assert "( 'd' ) & (" in levels[-2][0] and "'d'" not in levels[-3][0]
    for k in (3, 4):
        parts = [gate for gate, floor in levels if floor == k]
        for size in range(6):
            for held in itertools.combinations("abcde", size):
                memory = set(held)
                assert any(_holds(g, memory) for g in parts) == (len(memory) >= k), (k, held)
    # The loosest and the strictest level are not split.
    assert levels[0][0] == at_least(terms, 2) and levels[-1][0] == at_least(terms, 5)


def test_no_anchor_means_whole_levels():
    terms = ["'a'", "'b'", "'c'", "'d'"]
    assert coverage_levels(terms, 2) == coverage_levels(terms, 2, anchor=None)
    assert [floor for _, floor in coverage_levels(terms, 2)] == [2, 3, 4]
