"""The memories' model is called on batches bounded by texts and by padded tokens
(embedding/batches.token_batches), so a backlog of long memories never runs one call whose
activations outgrow the bound."""

from __future__ import annotations

from memhub.embedding.batches import token_batches


def padded(calls, lengths):
    return [len(call) * max(lengths[i] for i in call) for call in calls]


def test_short_texts_go_by_the_text_count():
    lengths = [12] * 10
    calls = token_batches(lengths, 4, 256)
    assert [len(c) for c in calls] == [4, 4, 2]


def test_long_texts_go_by_the_token_bound_and_a_text_over_it_alone():
    lengths = [256, 40, 130, 60, 300, 120, 10]
    calls = token_batches(lengths, 4, 256)
    assert sorted(i for call in calls for i in call) == list(range(len(lengths)))
    assert all(size <= 256 for call, size in zip(calls, padded(calls, lengths), strict=True)
               if len(call) > 1)
    assert [4] in calls and [0] in calls  # 300 and 256 tokens: each alone


def test_texts_are_grouped_shortest_first():
    lengths = [90, 10, 50, 11, 52]
    calls = token_batches(lengths, 2, 256)
    assert calls == [[1, 3], [2, 4], [0]]
