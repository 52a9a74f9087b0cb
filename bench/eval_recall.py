"""The recall evaluation: questions the corpus cannot answer, next to the answerable ones.

`recall` (storage/postgres/retrieval/recall.py) keeps only what the retrieval guard admits
(storage/retrieval_guard.py). Two sides, each with the embedding model and without it
(lexical only, as while the model loads or before vectors are written):
- unanswerable questions (tests/eval/unanswerable.json, split into `tune`, which the guard's
  rule was chosen on, and `holdout`, which it was not; plus the 9 of queries.json and the 27
  of docs/eval/probe-questions.json): the share
  for which recall returns nothing;
- the 48 answerable questions of queries.json: recall@10 of recall against memory_search's
  (hybrid, the same limit).
Every question goes through the backend's own `recall` and `search`.

Run by `bench.eval_retrieval` (its report's "Recall" section) and by
tests/eval/test_recall_gate.py.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from bench.eval_set import DOCS, EVAL_DIR, EVAL_PRINCIPAL, EvalEnv, K

UNANSWERABLE = EVAL_DIR / "unanswerable.json"
# 27 unanswerable questions on neighbouring topics written for bench.eval_probe, never tuned on.
PROBE = DOCS / "eval" / "probe-questions.json"
SPLITS = ("tune", "holdout")
SETTINGS = ("model", "lexical_only")
# Issue 33's targets: recall answers nothing for at least this share of unanswerable
# questions, while its recall@10 stays within this much of memory_search's.
TARGET_ABSTAIN = 0.75
TARGET_RECALL_GAP = 0.03


def load_unanswerable() -> list[dict[str, Any]]:
    return json.loads(UNANSWERABLE.read_text())


def _recall_at_k(relevant: dict[str, int], refs: list[str]) -> float:
    wanted = set(relevant)
    return len(wanted & set(refs[:K])) / len(wanted)


async def _side(env: EvalEnv) -> dict[str, Any]:
    backend, ns = env.backend, env.namespace

    def refs(results: list[dict[str, Any]]) -> list[str]:
        return [env.ref_of.get(r["memory"]["id"], r["memory"]["id"]) for r in results]

    searched, recalled, unanswered_answerable = [], [], []
    for query in (q for q in env.queries if q["relevant"]):
        found = await backend.search(EVAL_PRINCIPAL, ns, query["query"], limit=K, mode="hybrid")
        got = await backend.recall(EVAL_PRINCIPAL, ns, query["query"], limit=K)
        searched.append(_recall_at_k(query["relevant"], refs(found["results"])))
        recalled.append(_recall_at_k(query["relevant"], refs(got["results"])))
        if not got["results"]:
            unanswered_answerable.append(query["id"])
    groups: dict[str, list[tuple[str, str]]] = {split: [] for split in SPLITS}
    for question in load_unanswerable():
        groups[question["split"]].append((question["id"], question["query"]))
    groups["eval"] = [(q["id"], q["query"]) for q in env.queries if not q["relevant"]]
    groups["probe"] = [(f"probe{i + 1}", text) for i, text in
                       enumerate(json.loads(PROBE.read_text())["unanswerable"])]
    abstain, answered = {}, {}
    for name, questions in groups.items():
        hits = []
        for qid, text in questions:
            got = await backend.recall(EVAL_PRINCIPAL, ns, text, limit=K)
            if got["results"]:
                hits.append({"id": qid, "query": text, "got": refs(got["results"])[:3]})
        abstain[name] = round(1 - len(hits) / len(questions), 4)
        answered[name] = hits
    search_recall = round(statistics.fmean(searched), 4)
    recall_recall = round(statistics.fmean(recalled), 4)
    return {
        "search_recall@10": search_recall,
        "recall_recall@10": recall_recall,
        "gap": round(search_recall - recall_recall, 4),
        "abstain": abstain,
        "questions": {name: len(questions) for name, questions in groups.items()},
        "answered_unanswerable": answered,
        "unanswered_answerable": unanswered_answerable,
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
    questions = [(q["query"], set(q["relevant"])) for q in env.queries]
    questions += [(q["query"], set()) for q in load_unanswerable() if q["split"] == "tune"]
    pairs = []
    for text, relevant in questions:
        vector = np.asarray(await env.backend.embedder.query_vector(text), dtype=np.float64)
        sims = matrix @ (vector / np.linalg.norm(vector))
        pairs += [float(s) for ref, s in zip(refs, sims, strict=True) if ref not in relevant]
    return {"pairs": len(pairs), "p99": round(float(np.percentile(pairs, 99)), 3),
            "p99.9": round(float(np.percentile(pairs, 99.9)), 3)}


async def evaluate_recall(env: EvalEnv) -> dict[str, Any]:
    """{"model": side, "lexical_only": side, "calibration"}: the model detached for the
    second side."""
    model = env.backend.embedder
    out: dict[str, Any] = {"calibration": await calibrate(env)}
    try:
        for setting in SETTINGS:
            env.backend.embedder = model if setting == "model" else None
            out[setting] = await _side(env)
    finally:
        env.backend.embedder = model
    return out


def render_recall(results: dict[str, Any]) -> list[str]:
    """The "Recall" section of docs/evaluation.md."""
    from memhub.storage import retrieval_guard as guard

    lines = [
        "", "## Recall: questions with no answer", "",
        "`recall` returns only what the retrieval guard admits (`storage/retrieval_guard.py`): "
        "a query is answered when its best result is close in meaning (cosine similarity >= "
        f"{guard.SEMANTIC_FLOOR}) or holds words carrying >= {guard.LEXICAL_FLOOR} of the "
        "query's IDF; results weaker than "
        f"{guard.RELATIVE_CUT} of the best match's evidence are left out. "
        f"`tests/eval/unanswerable.json` holds {results['model']['questions']['tune']} `tune` "
        f"and {results['model']['questions']['holdout']} `holdout` questions the corpus cannot "
        "answer, written before the rule was chosen; the rule was chosen on `tune` (and "
        "queries.json) only; `probe` is docs/eval/probe-questions.json, never tuned on either. "
        "`lexical only`: the same questions with the model detached, as "
        "while it loads or before vectors are written. Targets (issue 33): abstain on >= "
        f"{TARGET_ABSTAIN:.0%} of unanswerable questions, recall@10 within "
        f"{TARGET_RECALL_GAP} of memory_search's on the answerable ones.", "",
        "| setting | abstain tune | abstain holdout | abstain queries.json (9) | "
        "abstain probe (27) | memory_search recall@10 | recall recall@10 | gap | "
        "answerable with no answer |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in SETTINGS:
        side = results[setting]
        a = side["abstain"]
        lines.append(
            f"| {setting.replace('_', ' ')} | {a['tune']:.3f} | {a['holdout']:.3f} | "
            f"{a['eval']:.3f} | {a['probe']:.3f} | {side['search_recall@10']:.3f} | "
            f"{side['recall_recall@10']:.3f} | {side['gap']:.3f} | "
            f"{len(side['unanswered_answerable'])} of 48 |")
    model, cal = results["model"], results["calibration"]
    lines += ["", f"The similarity floor: over {cal['pairs']} pairs of a tune-side question and "
              "a live memory that does not answer it, the model's cosine similarity is "
              f"{cal['p99']} at the 99th percentile and {cal['p99.9']} at the 99.9th; the "
              f"guard's floor is the latter ({guard.SEMANTIC_FLOOR})."]
    lines += ["", "Unanswerable questions recall still answered (with the model; top 3 refs):", ""]
    for split in ("tune", "holdout", "eval", "probe"):
        for hit in model["answered_unanswerable"][split]:
            lines.append(f"- {split} {hit['id']} \"{hit['query']}\": {', '.join(hit['got'])}")
    lines += ["", "Answerable questions recall leaves unanswered (with the model): "
              + (", ".join(model["unanswered_answerable"]) or "none") + ". Most are "
              "paraphrases: their answers sit at similarities (0.23-0.48) where the near-topic "
              "unanswerable questions find their nearest memories too, so no floor on this "
              "model's similarity keeps both sides."]
    return lines
