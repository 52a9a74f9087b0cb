"""The retrieval guard: whether a search result is a real match for its question.

Every question gets ranked results, because some word or some direction in the model's space
always matches a little. The guard says which of them are evidence. It reads, per result
(`why`):
- meaning: `sims`, the cosine similarity of each of the question's texts (the query, then
  every phrasing of it the caller sent in `also`) to the memory: the best of its content's
  vector and its questions' vectors, a question's less QUESTION_PENALTY (the same discount
  the semantic leg ranks by); and `votes`, for how many of the texts this memory is the
  namespace's nearest;
- words: `coverage`, the share of the query's own IDF that the memory's matched words carry
  (its content's or its questions', the lexical leg, storage/postgres/retrieval/lexical_leg.py).

A result's evidence is the stronger of the two, each against its floor:
evidence = max(best similarity / SEMANTIC_FLOOR, coverage / LEXICAL_FLOOR).
1. The question is answered when some result holds LEXICAL_FLOOR of its words, or reaches the
   similarity floor while being the nearest memory for at least AGREEMENT of its texts (all of
   them when there are fewer). One phrasing brushing past a topic's memory is not an answer;
   the question and its phrasings converging on one memory is (docs/evaluation.md, Recall).
2. Of an answered question, a result is admitted when its evidence is at least RELATIVE_CUT
   of the best's: what rides along must be of the same order as the best match. An admitted
   result at evidence 1 or more is `strong`; one below it (it completes the answer but is not
   one on its own) is `weak`: kept, and marked, so the calling model can judge it.

Without a model (or before a memory's vectors are written) there is no similarity and words
alone decide.

The values are measured, not chosen by feel (bench/eval_recall.py, docs/evaluation.md):
- SEMANTIC_FLOOR: the similarity that 1 in 1,000 question-memory pairs where the memory does
  not answer reach with all-MiniLM-L6-v2 (the 99.9th percentile over the tune-side
  questions: 0.535); a property of the model, another needs its own.
- LEXICAL_FLOOR: three quarters of the query's IDF (non-answering lexical hits reach 0.66 at
  their 99th percentile).
- AGREEMENT: 2 texts. With phrasings, the best similarity alone answered 68% of the questions
  with no answer; requiring two texts to agree on the nearest memory, 73%, and kept a relevant
  answer for 97% of the answerable ones (tune and holdout halves alike).
- RELATIVE_CUT: 0.3 of the best match's evidence.
- QUESTION_PENALTY: 0.10 of similarity (docs/retrieval.md, Questions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SEMANTIC_FLOOR = 0.535
LEXICAL_FLOOR = 0.75
RELATIVE_CUT = 0.3
AGREEMENT = 2
QUESTION_PENALTY = 0.10

# The verdict's level, as the tools show it (`match`).
STRONG = "strong"
WEAK = "weak"
NONE = "none"

# Stable reason codes (returned to clients, counted by recall).
MATCH = "match"  # reaches the floor itself
NEAR_BEST = "near_best"  # below the floor, within the relative cut of a best match that is not
NO_MATCH = "no_match"  # nothing in the results reaches the floor: the query is not answered
FAR_FROM_BEST = "far_from_best"  # the query is answered, but this result is far weaker
REASONS = (MATCH, NEAR_BEST, NO_MATCH, FAR_FROM_BEST)


def similarity(why: Mapping[str, Any]) -> float | None:
    """The best similarity of the question's texts to the memory, None without vectors."""
    sims = why.get("sims")
    if sims:
        return max(sims)
    distance = why.get("distance")
    return 1.0 - distance if distance is not None else None


def evidence(why: Mapping[str, Any]) -> float:
    """max(similarity / SEMANTIC_FLOOR, coverage / LEXICAL_FLOOR); 0 without either signal."""
    sim, coverage = similarity(why), why.get("coverage")
    meaning = sim / SEMANTIC_FLOOR if sim is not None else 0.0
    words = coverage / LEXICAL_FLOOR if coverage is not None else 0.0
    return max(meaning, words, 0.0)


def answers(why: Mapping[str, Any], texts: int) -> bool:
    """Whether this result alone makes the question answered (rule 1)."""
    coverage = why.get("coverage")
    if coverage is not None and coverage >= LEXICAL_FLOOR:
        return True
    sim = similarity(why)
    if sim is None or sim < SEMANTIC_FLOOR:
        return False
    votes = why.get("votes")
    return votes is None or votes >= min(AGREEMENT, max(texts, 1))


def judge(whys: Sequence[Mapping[str, Any]], texts: int = 1) -> list[dict[str, Any]]:
    """One verdict per result, in order: {"admitted", "level", "reason", "evidence"}. `whys`:
    the results' `why` dicts (sims, votes, distance, coverage; any may be None); `texts`: how
    many texts the question had (the query and its phrasings)."""
    scores = [evidence(w) for w in whys]
    best = max(scores, default=0.0)
    answered = any(answers(w, texts) for w in whys)
    verdicts = []
    for score in scores:
        if not answered:
            admitted, reason = False, NO_MATCH
        elif score >= 1.0:
            admitted, reason = True, MATCH
        elif score >= RELATIVE_CUT * best:
            admitted, reason = True, NEAR_BEST
        else:
            admitted, reason = False, FAR_FROM_BEST
        level = (STRONG if admitted and score >= 1.0 else WEAK if admitted else NONE)
        verdicts.append({"admitted": admitted, "level": level, "reason": reason,
                         "evidence": round(score, 3)})
    return verdicts


def rejected_reasons(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """{reason: count} over the rejected verdicts."""
    out: dict[str, int] = {}
    for verdict in verdicts:
        if not verdict["admitted"]:
            out[verdict["reason"]] = out.get(verdict["reason"], 0) + 1
    return out


def admitted(found: Mapping[str, Any]) -> dict[str, Any]:
    """recall's answer from a search's (`found`, its results carrying their verdicts): the
    admitted results, best first, "answered", "rejected" (how many of the results were not
    admitted), "reasons" and "degraded"."""
    results = found["results"]
    kept = [r for r in results if r["match"]["admitted"]]
    return {"results": kept, "answered": bool(kept), "rejected": len(results) - len(kept),
            "reasons": rejected_reasons([r["match"] for r in results]),
            "degraded": found["degraded"]}
