"""The retrieval guard: whether a search result is a real match for its query.

Every question gets ranked results, because some word or some direction in the model's space
always matches a little. The guard says which of them are evidence. It reads two signals the
hybrid search already has for each result (`why`):
- meaning: cosine similarity, 1 - `distance` (the query's vector against the memory's, filled
  in for every result that has a vector of the current model, also those only words found);
- words: `coverage`, the share of the query's IDF that the memory's matched words carry (the
  lexical leg, storage/postgres/retrieval/lexical_leg.py): how much of what the query says is in it.

A result's evidence is the stronger of the two, each measured against its own floor:
evidence = max(similarity / SEMANTIC_FLOOR, coverage / LEXICAL_FLOOR). Then, as in seed 004,
an absolute floor and a relative cut:
1. The query is answered only if its best result reaches evidence 1 (a floor on the best
   match, not on each result: the memories that complete an answer are often weaker than the
   one that gives it).
2. A result is admitted if its evidence is at least RELATIVE_CUT of the best's: what rides
   along must be of the same order as the best match, not the tail of the ranking.

Without a model (or before a memory's vector is written) there is no similarity and words
alone decide: a result is a match when it holds words carrying LEXICAL_FLOOR of the query's
information. Queries answered only by meaning get nothing then (docs/evaluation.md, Recall).

The floors are measured, not chosen by feel (bench/eval_recall.py, docs/evaluation.md):
- SEMANTIC_FLOOR: the similarity that 1 in 1,000 query-memory pairs where the memory does not
  answer the query reach with all-MiniLM-L6-v2 (the 99.9th percentile over the tune-side
  questions: 0.535). A property of the model's similarity distribution for unrelated text,
  so it carries to questions it was not measured on; another model needs its own.
- LEXICAL_FLOOR: three quarters of the query's IDF. Non-answering lexical hits reach 0.66 at
  their 99th percentile; a memory that holds the words carrying three quarters of what a
  question says is about that question.
- RELATIVE_CUT: 0.3 of the best match's evidence, the strictest cut (in tenths) that cost the
  answerable questions no relevant memory; it leaves out about one result in six.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SEMANTIC_FLOOR = 0.535
LEXICAL_FLOOR = 0.75
RELATIVE_CUT = 0.3

# Stable reason codes (returned to clients, counted by recall).
MATCH = "match"  # reaches the floor itself
NEAR_BEST = "near_best"  # below the floor, within the relative cut of a best match that is not
NO_MATCH = "no_match"  # nothing in the results reaches the floor: the query is not answered
FAR_FROM_BEST = "far_from_best"  # the query is answered, but this result is far weaker
REASONS = (MATCH, NEAR_BEST, NO_MATCH, FAR_FROM_BEST)


def evidence(why: Mapping[str, Any]) -> float:
    """max(similarity / SEMANTIC_FLOOR, coverage / LEXICAL_FLOOR); 0 without either signal."""
    distance, coverage = why.get("distance"), why.get("coverage")
    meaning = (1.0 - distance) / SEMANTIC_FLOOR if distance is not None else 0.0
    words = coverage / LEXICAL_FLOOR if coverage is not None else 0.0
    return max(meaning, words, 0.0)


def judge(whys: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per result, in order: {"admitted", "reason", "evidence"}. `whys`: the
    results' `why` dicts (distance, coverage; either may be None)."""
    scores = [evidence(w) for w in whys]
    best = max(scores, default=0.0)
    verdicts = []
    for score in scores:
        if best < 1.0:
            admitted, reason = False, NO_MATCH
        elif score >= 1.0:
            admitted, reason = True, MATCH
        elif score >= RELATIVE_CUT * best:
            admitted, reason = True, NEAR_BEST
        else:
            admitted, reason = False, FAR_FROM_BEST
        verdicts.append({"admitted": admitted, "reason": reason, "evidence": round(score, 3)})
    return verdicts


def rejected_reasons(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """{reason: count} over the rejected verdicts."""
    out: dict[str, int] = {}
    for verdict in verdicts:
        if not verdict["admitted"]:
            out[verdict["reason"]] = out.get(verdict["reason"], 0) + 1
    return out
