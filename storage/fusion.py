"""Reciprocal Rank Fusion: combine ranked lists by position, never by score.

ts_rank_cd is unbounded and depends on the corpus and the query's length; cosine distance lives in
[0, 2]. Their sum has no meaning, and normalising each per query turns a mediocre best match into
1.0 just like a perfect one. RRF needs no shared scale: score(d) = sum over legs of 1 / (k + rank).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    key: Hashable
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # leg -> 1-based rank


def rrf(legs: Mapping[str, Sequence[Hashable]], k: int) -> list[Fused]:
    """Fuse the legs' ranked keys; best first. Ties go to the better best-rank, then to the
    earlier-named leg's order, so the result is deterministic."""
    fused: dict[Hashable, Fused] = {}
    for leg, keys in legs.items():
        for rank, key in enumerate(keys, start=1):
            item = fused.setdefault(key, Fused(key, 0.0))
            if leg in item.ranks:
                continue  # a leg lists a key once; ignore repeats
            item.ranks[leg] = rank
            item.score += 1.0 / (k + rank)
    order = list(legs)

    def tiebreak(item: Fused) -> tuple:
        return (-item.score, min(item.ranks.values()),
                [item.ranks.get(leg, 10**9) for leg in order])

    return sorted(fused.values(), key=tiebreak)
