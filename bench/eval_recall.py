"""The recall evaluation: questions the corpus cannot answer, next to the answerable ones.

`recall` (storage/postgres/retrieval/recall.py) keeps only what the retrieval guard admits
(storage/retrieval_guard.py). Measured for each aid the calling model can give (its phrasings
of the question, `also`; the questions each memory answers, stored with it), with the
embedding model and without it (lexical only, as while the model loads):
- unanswerable questions (tests/eval/unanswerable.json, split into `tune`, which the guard's
  rule was chosen on, and `holdout`, which it was not; the 9 of queries.json; the 27 of
  docs/eval/probe-questions.json): the share for which recall returns nothing (`abstain`);
- answerable questions (the 48 of queries.json and the 21 paraphrases of
  probe-questions.json): of those memory_search answers (a relevant memory in its best 10),
  the share for which recall keeps a relevant one (`kept`).
Every question goes through the backend's own `recall` and `search`.

Run by `bench.eval_retrieval` (its report's "Recall" section) and by
tests/eval/test_recall_gate.py.
"""

from __future__ import annotations

import json
from typing import Any

from bench.eval_set import DOCS, EVAL_DIR, EVAL_PRINCIPAL, EvalEnv, K, load_phrasings

UNANSWERABLE = EVAL_DIR / "unanswerable.json"
# 27 unanswerable questions on neighbouring topics and 21 paraphrases written for
# bench.eval_probe, never tuned on.
PROBE = DOCS / "eval" / "probe-questions.json"
GROUPS = ("tune", "holdout", "eval", "probe")
AIDS = ("plain", "also", "also+questions")
SETTINGS = ("model", "lexical_only")
# Issue 45's targets, with phrasings: recall keeps a relevant answer for this share of the
# answerable questions memory_search answers, and answers nothing for this share of the
# unanswerable ones.
TARGET_KEPT = 0.95
TARGET_ABSTAIN = 0.75


def load_unanswerable() -> list[dict[str, Any]]:
    return json.loads(UNANSWERABLE.read_text())


def questions() -> tuple[list[dict[str, Any]], dict[str, list[tuple[str, str]]]]:
    """(answerable [{id, query, relevant}], unanswerable {group: [(id, query)]}); ids match
    tests/eval/phrasings.json's."""
    probe = json.loads(PROBE.read_text())
    _, queries = _load_queries()
    answerable = [{"id": q["id"], "query": q["query"], "relevant": set(q["relevant"])}
                  for q in queries if q["relevant"]]
    answerable += [{"id": f"pp{i + 1:02d}", "query": text, "relevant": set(relevant)}
                   for i, (text, relevant) in enumerate(probe["paraphrase"])]
    groups: dict[str, list[tuple[str, str]]] = {group: [] for group in GROUPS}
    for question in load_unanswerable():
        groups[question["split"]].append((question["id"], question["query"]))
    groups["eval"] = [(q["id"], q["query"]) for q in queries if not q["relevant"]]
    groups["probe"] = [(f"pu{i + 1:02d}", text) for i, text in enumerate(probe["unanswerable"])]
    return answerable, groups


def _load_queries() -> tuple[Any, list[dict[str, Any]]]:
    from bench.eval_set import load_set

    return load_set()


async def _side(env: EvalEnv, also: dict[str, list[str]] | None) -> dict[str, Any]:
    backend, ns = env.backend, env.namespace

    def refs(results: list[dict[str, Any]]) -> set[str]:
        return {env.ref_of.get(r["memory"]["id"], r["memory"]["id"]) for r in results}

    answerable, groups = questions()
    searched = kept = 0
    lost: list[str] = []
    weak = 0
    for q in answerable:
        phrasings = (also or {}).get(q["id"])
        found = await backend.search(EVAL_PRINCIPAL, ns, q["query"], limit=K, mode="hybrid",
                                     also=phrasings)
        if not q["relevant"] & refs(found["results"]):
            continue
        searched += 1
        got = await backend.recall(EVAL_PRINCIPAL, ns, q["query"], limit=K, also=phrasings)
        if q["relevant"] & refs(got["results"]):
            kept += 1
            weak += all(r["match"]["level"] == "weak" for r in got["results"]
                        if env.ref_of.get(r["memory"]["id"]) in q["relevant"])
        else:
            lost.append(q["id"])
    abstain, answered = {}, {}
    for name, group in groups.items():
        hits = []
        for qid, text in group:
            got = await backend.recall(EVAL_PRINCIPAL, ns, text, limit=K,
                                       also=(also or {}).get(qid))
            if got["results"]:
                hits.append({"id": qid, "query": text, "got": [
                    env.ref_of.get(r["memory"]["id"], r["memory"]["id"])
                    for r in got["results"][:3]]})
        abstain[name] = round(1 - len(hits) / len(group), 4)
        answered[name] = hits
    total = sum(len(g) for g in groups.values())
    return {
        "kept": round(kept / max(searched, 1), 4), "kept_n": kept, "searched_n": searched,
        "answerable_n": len(answerable), "kept_weak_only": weak, "lost": lost,
        "abstain": abstain,
        "abstain_all": round(sum(abstain[g] * len(groups[g]) for g in groups) / total, 4),
        "questions": {name: len(group) for name, group in groups.items()},
        "answered_unanswerable": answered,
    }


async def calibrate(env: EvalEnv) -> dict[str, Any]:
    """Where SEMANTIC_FLOOR comes from: the model's cosine similarity between each tune-side
    question (the answerable ones of queries.json, its 9 unanswerable ones and the `tune`
    split) and every live memory that does not answer it, at the 99th and 99.9th
    percentiles."""
    import numpy as np

    async def vectors(conn):
        cur = await conn.execute(
            "SELECT m.id, e.embedding FROM live_memories m JOIN memory_embeddings e "
            "ON e.memory_id = m.id AND e.revision = m.current_revision "
            "WHERE m.namespace = %s AND NOT m.quarantined", [env.namespace])
        return await cur.fetchall()

    rows = await env.backend._run(env.namespace, vectors, retry_safe=True)
    refs = [env.ref_of.get(str(r["id"])) for r in rows]
    matrix = np.array([np.asarray(r["embedding"].to_numpy(), dtype=np.float64) for r in rows])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    pairs_of = [(q["query"], set(q["relevant"])) for q in env.queries]
    pairs_of += [(q["query"], set()) for q in load_unanswerable() if q["split"] == "tune"]
    pairs = []
    for text, relevant in pairs_of:
        vector = np.asarray(await env.backend.embedder.query_vector(text), dtype=np.float64)
        sims = matrix @ (vector / np.linalg.norm(vector))
        pairs += [float(s) for ref, s in zip(refs, sims, strict=True) if ref not in relevant]
    return {"pairs": len(pairs), "p99": round(float(np.percentile(pairs, 99)), 3),
            "p99.9": round(float(np.percentile(pairs, 99.9)), 3)}


async def evaluate_recall(env: EvalEnv) -> dict[str, Any]:
    """{"model": {aid: side}, "lexical_only": {"plain": side}, "calibration"}: the model
    detached for the lexical-only side."""
    phrasings = load_phrasings()
    model = env.backend.embedder
    out: dict[str, Any] = {"calibration": await calibrate(env), "model": {}}
    for aid in AIDS:
        side_env = env.questioned if "questions" in aid and env.questioned else env
        out["model"][aid] = await _side(side_env, phrasings if "also" in aid else None)
    try:
        env.backend.embedder = None
        out["lexical_only"] = {"plain": await _side(env, None)}
    finally:
        env.backend.embedder = model
    return out


def render_recall(results: dict[str, Any]) -> list[str]:
    """The "Recall" section of docs/evaluation.md."""
    from memhub.storage import retrieval_guard as guard

    model = results["model"]
    any_side = model["plain"]
    q = any_side["questions"]
    lines = [
        "", "## Recall: questions with no answer", "",
        "`recall` returns only what the retrieval guard admits (`storage/retrieval_guard.py`): "
        "a question is answered when a result holds words carrying "
        f">= {guard.LEXICAL_FLOOR} of its IDF, or is close in meaning (cosine similarity >= "
        f"{guard.SEMANTIC_FLOOR}) and the nearest memory for at least {guard.AGREEMENT} of "
        "its texts (the question and its phrasings: all of them when there are fewer); "
        f"results weaker than {guard.RELATIVE_CUT} of the best's evidence are left out, and "
        "those below the floor are marked `weak`. `kept`: of the answerable questions "
        f"memory_search answers (a relevant memory in its best {K}; {any_side['answerable_n']} "
        "answerable: the 48 of queries.json and the 21 paraphrases of "
        "docs/eval/probe-questions.json), the share for which recall keeps a relevant one. "
        f"`abstain`: the share of unanswerable questions answered with nothing: "
        f"`tests/eval/unanswerable.json` holds {q['tune']} `tune` and {q['holdout']} `holdout` "
        "questions (the rule was chosen on `tune` and queries.json only), queries.json "
        f"{q['eval']}, the probe set {q['probe']} (never tuned on). Targets with phrasings: "
        f"kept >= {TARGET_KEPT:.0%}, abstain >= {TARGET_ABSTAIN:.0%}.", "",
        "| setting | aid | kept | abstain, all | tune | holdout | queries.json | probe |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = [("model", aid, side) for aid, side in model.items()]
    rows += [("lexical only", aid, side) for aid, side in results["lexical_only"].items()]
    for setting, aid, side in rows:
        a = side["abstain"]
        lines.append(
            f"| {setting} | {aid} | {side['kept']:.3f} ({side['kept_n']} of "
            f"{side['searched_n']}) | {side['abstain_all']:.3f} | {a['tune']:.3f} | "
            f"{a['holdout']:.3f} | {a['eval']:.3f} | {a['probe']:.3f} |")
    cal = results["calibration"]
    lines += ["", f"The similarity floor: over {cal['pairs']} pairs of a tune-side question and "
              "a live memory that does not answer it, the model's cosine similarity is "
              f"{cal['p99']} at the 99th percentile and {cal['p99.9']} at the 99.9th; the "
              f"guard's floor is the latter ({guard.SEMANTIC_FLOOR})."]
    best = model["also+questions"]
    lines += ["", "Unanswerable questions recall still answered (with phrasings and questions; "
              "top 3 refs): most are near-topic questions whose topic's memory is close in "
              "meaning but says nothing of the detail asked:", ""]
    for group in GROUPS:
        for hit in best["answered_unanswerable"][group]:
            lines.append(f"- {group} {hit['id']} \"{hit['query']}\": {', '.join(hit['got'])}")
    lines += ["", "Answerable questions recall leaves unanswered (with phrasings and "
              "questions): " + (", ".join(best["lost"]) or "none") + "."]
    return lines
