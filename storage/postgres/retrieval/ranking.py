"""How the legs' answers become one ranking, beside the RRF of storage/fusion.py: the one
vector a question and its phrasings search with, and the one lexical list of the memories'
own words and their questions'. Measured on the evaluation set (docs/evaluation.md,
Phrasings and questions; docs/retrieval.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...retrieval_guard import judge

# With phrasings, the question's own vector counts this many times in the one the semantic leg
# searches with (centroid): the caller's words lead, the phrasings widen.
QUERY_WEIGHT = 2.0
# A place in the questions' lexical list counts this many times further down than the same
# place in the memories' own words (best_of).
QUESTION_RANK_PENALTY = 2.0


def centroid(vectors: list[Any] | None) -> Any:
    """The one vector the semantic leg searches with: the question's own, or, with phrasings,
    the normalised sum of every text's unit vector with the question's counted QUERY_WEIGHT
    times (docs/retrieval.md, Phrasings: measured against joining the texts and against rank
    fusion of one search per text)."""
    if not vectors:
        return None
    if len(vectors) == 1:
        return vectors[0]
    import numpy as np

    units = [np.asarray(v, dtype=np.float32) / max(float(np.linalg.norm(v)), 1e-12)
             for v in vectors]
    total = QUERY_WEIGHT * units[0] + sum(units[1:])
    return (total / max(float(np.linalg.norm(total)), 1e-12)).astype(np.float32)


def best_of(own: list[dict[str, Any]], asked: list[dict[str, Any]],
            depth: int) -> list[dict[str, Any]]:
    """One lexical list from the memories' own words and their questions': each memory at the
    better of its places (a question's counting QUESTION_RANK_PENALTY times further down), with
    the larger of its two coverages. A question can only add a way to be found."""
    place: dict[Any, float] = {}
    coverage: dict[Any, float] = {}
    for rank, row in enumerate(own, start=1):
        place[row["id"]] = rank
        coverage[row["id"]] = row["coverage"]
    for rank, row in enumerate(asked, start=1):
        place[row["id"]] = min(place.get(row["id"], float("inf")), rank * QUESTION_RANK_PENALTY)
        coverage[row["id"]] = max(coverage.get(row["id"], 0.0), row["coverage"])
    order = sorted(place, key=lambda key: place[key])[:depth]
    return [{"id": key, "coverage": coverage[key]} for key in order]


def public_why(why: dict[str, Any]) -> dict[str, Any]:
    """What a result says of why it is there: its place in each leg, its distance to the
    question and the share of the question's words it holds (not the guard's inputs)."""
    return {k: why.get(k) for k in ("lexical_rank", "semantic_rank", "distance", "coverage")}


def judged(results: list[dict[str, Any]], texts: int,
           as_dict: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranked results as search answers them, each with the retrieval guard's verdict (`match`)
    over the whole list; `as_dict` shapes a row (the present's memory, or one as it was)."""
    verdicts = judge([r["why"] for r in results], texts=texts)
    return [{"memory": as_dict(r["row"]), "score": round(r["score"], 6),
             "why": public_why(r["why"]), "match": verdict}
            for r, verdict in zip(results, verdicts, strict=True)]
