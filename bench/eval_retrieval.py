"""Retrieval evaluation on the hand-graded Paystream set (tests/eval/), through the real path.

The corpus is loaded with `remember` (supersessions included), twice: as written, and with the
questions each memory answers (bench/eval_set.py); the 4 expired memories get an expiry in the
past by SQL. Embeddings are made by the real worker code (`process_batch`). Every query runs
through `backend.search` (what the `memory_search` tool calls) in each mode, without and with
its other phrasings (`also`). Metrics come from `ranx`.

    .venv/bin/python -m bench.eval_retrieval     # writes docs/evaluation.md and
                                                 # docs/eval/baseline.json

Also importable: tests/eval/test_retrieval_gate.py uses `evaluate_all`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import warnings
from typing import Any

from bench.eval_set import (
    DOCS,
    EVAL_PRINCIPAL,
    EvalEnv,
    K,
    embedded_eval_env,
    load_phrasings,
)
from memhub.config import Settings

REPORT = DOCS / "evaluation.md"
BASELINE = DOCS / "eval" / "baseline.json"
MODES = ("lexical", "semantic", "hybrid")
TYPES = ("lexical", "paraphrase", "identifier", "stale_trap", "unanswerable", "multi")
ANSWERABLE_TYPES = tuple(t for t in TYPES if t != "unanswerable")
METRICS = ("ndcg@10", "recall@10", "precision@10", "mrr")
# What the calling model adds: its phrasings of the query, the questions a memory answers.
VARIANTS = ("plain", "also", "questions", "also+questions")
# A regression beyond this (absolute) on any gated metric fails CI.
MARGIN = 0.02


def variant_env(env: EvalEnv, variant: str) -> EvalEnv:
    """The namespace a variant reads: the one written with questions for those with them."""
    if "questions" in variant:
        assert env.questioned is not None
        return env.questioned
    return env


async def run_mode(env: EvalEnv, mode: str, limit: int = K, *,
                   also: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """qid -> returned refs, best first (a memory the set does not know shows as its id).
    `also`: each query's other phrasings, by id."""
    out: dict[str, list[str]] = {}
    for query in env.queries:
        result = await env.backend.search(EVAL_PRINCIPAL, env.namespace, query["query"],
                                          limit=limit, mode=mode,
                                          also=(also or {}).get(query["id"]))
        out[query["id"]] = [env.ref_of.get(r["memory"]["id"], r["memory"]["id"])
                            for r in result["results"]]
    return out


def _ranx_scores(queries: list[dict[str, Any]], runs: dict[str, list[str]]
                 ) -> dict[str, dict[str, float]]:
    """Per-query nDCG@10, recall@10, P@10 and MRR from ranx (answerable queries only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ranx import Qrels, Run, evaluate

        answerable = [q for q in queries if q["relevant"]]
        qrels = Qrels({q["id"]: dict(q["relevant"]) for q in answerable})
        run_dict = {}
        for q in answerable:
            refs = runs[q["id"]][:K]
            # ranx needs a non-empty run per query; an empty answer scores 0 everywhere.
            run_dict[q["id"]] = ({ref: float(len(refs) - i) for i, ref in enumerate(refs)}
                                 or {"__nothing__": 0.0})
        scores = evaluate(qrels, Run(run_dict), list(METRICS), return_mean=False)
    return {q["id"]: {m: float(scores[m][i]) for m in METRICS} for i, q in enumerate(answerable)}


def evaluate_mode(env_queries: list[dict[str, Any]], runs: dict[str, list[str]],
                  active: set[str]) -> dict[str, Any]:
    per_query = _ranx_scores(env_queries, runs)
    leaks = []
    for query in env_queries:
        for ref in runs[query["id"]]:
            if ref not in active:
                leaks.append({"query": query["id"], "ref": ref})

    def summarise(subset: list[dict[str, Any]]) -> dict[str, float]:
        answerable = [q for q in subset if q["relevant"]]
        unanswerable = [q for q in subset if not q["relevant"]]
        row: dict[str, float] = {"queries": len(subset)}
        for metric in METRICS:
            if answerable:
                row[metric] = round(statistics.fmean(per_query[q["id"]][metric]
                                                     for q in answerable), 4)
        if unanswerable:
            row["abstain"] = round(sum(1 for q in unanswerable if not runs[q["id"]])
                                   / len(unanswerable), 4)
        return row

    overall = summarise(env_queries)
    overall["stale_leaks"] = len(leaks)
    by_type = {t: summarise([q for q in env_queries if q["type"] == t]) for t in TYPES}
    failing = []
    for query in env_queries:
        if query["relevant"]:
            score = per_query[query["id"]]["ndcg@10"]
            if score < 0.5:
                failing.append({"id": query["id"], "type": query["type"],
                                "query": query["query"], "ndcg@10": round(score, 3),
                                "got": runs[query["id"]][:5],
                                "want": sorted(query["relevant"], key=lambda r:
                                               -query["relevant"][r])})
        elif runs[query["id"]]:
            failing.append({"id": query["id"], "type": query["type"], "query": query["query"],
                            "ndcg@10": None, "got": runs[query["id"]][:5], "want": []})
    return {"overall": overall, "by_type": by_type, "failing": failing, "leaks": leaks}


async def evaluate_all(env: EvalEnv, modes=MODES, variants=VARIANTS
                       ) -> dict[str, dict[str, Any]]:
    """{variant: {mode: evaluate_mode(...)}}."""
    phrasings = load_phrasings()
    out: dict[str, dict[str, Any]] = {}
    for variant in variants:
        venv = variant_env(env, variant)
        also = phrasings if variant.startswith("also") else None
        out[variant] = {mode: evaluate_mode(venv.queries, await run_mode(venv, mode, also=also),
                                            venv.active)
                        for mode in modes}
    return out


async def coverage_sweep(env: EvalEnv) -> list[dict[str, Any]]:
    """nDCG / precision against the lexical coverage floor (plain queries), to choose it on
    the set rather than by intuition."""
    backend = env.backend
    original = backend.lexical_min_coverage
    rows = []
    try:
        for cov in (0.0, 0.25, 0.34, 0.5, 0.67, 0.75, 1.0):
            backend.lexical_min_coverage = cov
            row: dict[str, Any] = {"coverage": cov}
            for mode in ("lexical", "hybrid"):
                result = evaluate_mode(env.queries, await run_mode(env, mode), env.active)
                row[mode] = {k: result["overall"].get(k) for k in ("ndcg@10", "precision@10")}
            rows.append(row)
    finally:
        backend.lexical_min_coverage = original
    return rows


async def token_saving(env: EvalEnv) -> dict[str, Any]:
    """memory_context at its default budget vs. sending every live memory."""
    from memhub.storage.context_pack import count_tokens, dumps
    from memhub.storage.postgres.retrieval.context import context_item

    async def all_live(conn):
        cur = await conn.execute("SELECT * FROM live_memories WHERE namespace = %s",
                                 [env.namespace])
        return await cur.fetchall()

    rows = await env.backend._run(env.namespace, all_live, retry_safe=True)
    whole_json = count_tokens(dumps([context_item(r) for r in rows]))
    whole_text = count_tokens("\n\n".join(
        f"{r['title']}\n{r['content']}" if r["title"] else r["content"] for r in rows))
    out: dict[str, Any] = {"live_memories": len(rows), "whole_corpus_tokens": whole_json,
                           "whole_corpus_text_tokens": whole_text, "calls": []}
    for query in (None, "how do we handle webhooks and retries",
                  "database migrations and schema changes"):
        ctx = await env.backend.context(EVAL_PRINCIPAL, env.namespace, query)
        out["calls"].append({"query": query, "memories": len(ctx["memories"]),
                             "tokens_used": ctx["tokens_used"],
                             "budget_tokens": ctx["budget_tokens"], "omitted": ctx["omitted"],
                             "saving": round(whole_json / max(ctx["tokens_used"], 1), 1)})
    return out


# --- report ------------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def provenance_line() -> str:
    """Date, commit and machine of this run, for the report's first lines."""
    import os

    from bench.common import machine, provenance

    stamp = provenance()
    modified = " (working tree modified)" if stamp["tree"] == "modified" else ""
    return (f"Measured on {stamp['date']} at commit `{stamp['commit']}`{modified} on "
            f"{machine()}, 1-minute load average {os.getloadavg()[0]:.1f} at the end.")


def baseline_of(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {variant: {mode: {"overall": r["overall"], "by_type": r["by_type"]}
                      for mode, r in modes.items()}
            for variant, modes in results.items()}


def render_report(results, sweep_rows, tokens, env: EvalEnv, settings: Settings,
                  lag: dict[str, Any] | None, recall: dict[str, Any] | None = None) -> str:
    """docs/evaluation.md: every figure of this run, nothing else."""
    plain = results["plain"]
    n_types = {t: plain["hybrid"]["by_type"][t]["queries"] for t in TYPES}
    lines = [
        "# Retrieval evaluation",
        "",
        "Generated by `.venv/bin/python -m bench.eval_retrieval` (which also writes "
        "`docs/eval/baseline.json`, the figures `tests/eval/test_retrieval_gate.py` holds "
        "every test run to); rerun it rather than editing this file. "
        + provenance_line(),
        "",
        "The set is `tests/eval/` (described in its README): 219 memories of one project, 21 "
        "supersession chains, 4 expired memories, 57 queries graded by reading the corpus. "
        "Every query runs through `backend.search`, the path the `memory_search` tool takes, "
        "in each mode. What the calling model adds was written before any of it was tuned, by "
        "models that saw one side only (tests/eval/README.md): `also`, three other phrasings "
        "of each query (`tests/eval/phrasings.json`, written from the queries alone); "
        "`questions`, three questions each memory answers (`tests/eval/memory_questions.json`, "
        "written from the memories alone), stored with the memories in a second namespace.",
        "",
        f"Settings: model `{settings.embed_model}`; lexical BM25 with coverage floor "
        f"{env.backend.lexical_min_coverage} (at most {env.backend.lexical_max_need} words); "
        f"RRF k={settings.rrf_k}; hnsw.ef_search={settings.hnsw_ef_search}. Metrics by `ranx`; "
        "nDCG@10 uses the 0/1/2 grades, recall/MRR count grade >= 1 as relevant; they average "
        "over the 48 answerable queries. memory_search always ranks (whether a result answers "
        "is the retrieval guard's `match`): abstaining is `recall`'s, below. `stale leaks` "
        "counts every superseded or expired memory returned by any query at any rank: it must "
        "be 0.",
        "",
        "## Per mode, without and with what the calling model adds",
        "",
        "| mode | aid | nDCG@10 | recall@10 | MRR | stale leaks |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for mode in MODES:
        for variant in VARIANTS:
            o = results[variant][mode]["overall"]
            lines.append(f"| {mode} | {variant} | {_fmt(o.get('ndcg@10'))} | "
                         f"{_fmt(o.get('recall@10'))} | {_fmt(o.get('mrr'))} | "
                         f"{o['stale_leaks']} |")
    lines += ["", "## Per query type, hybrid (nDCG@10)", "",
              "| type | n | " + " | ".join(VARIANTS) + " |",
              "| --- | --- | " + " | ".join("---" for _ in VARIANTS) + " |"]
    for qtype in ANSWERABLE_TYPES:
        cells = [_fmt(results[v]["hybrid"]["by_type"][qtype].get("ndcg@10")) for v in VARIANTS]
        lines.append(f"| {qtype} | {n_types[qtype]} | " + " | ".join(cells) + " |")
    lines += ["", "## Per query type and mode, plain queries (nDCG@10)", "",
              "| type | n | " + " | ".join(MODES) + " |",
              "| --- | --- | " + " | ".join("---" for _ in MODES) + " |"]
    for qtype in ANSWERABLE_TYPES:
        cells = [_fmt(plain[m]["by_type"][qtype].get("ndcg@10")) for m in MODES]
        lines.append(f"| {qtype} | {n_types[qtype]} | " + " | ".join(cells) + " |")
    ident = {q["id"]: q for q in env.queries if q["type"] == "identifier"}
    fails = {(v, m): {f["id"] for f in results[v][m]["failing"]}
             for v in VARIANTS for m in MODES}
    lines += ["", "## Identifiers", "",
              "The lexical leg matches each query word's contraction-stripped and acronym "
              "singular/plural spellings as well as the word (docs/retrieval.md, Lexical leg); "
              "`miss`: nDCG@10 below 0.5.", "",
              "| query | " + " | ".join(MODES) + " | hybrid, also+questions |",
              "| --- | " + " | ".join("---" for _ in MODES) + " | --- |"]
    for qid, query in ident.items():
        cells = ["miss" if qid in fails[("plain", m)] else "ok" for m in MODES]
        cells.append("miss" if qid in fails[("also+questions", "hybrid")] else "ok")
        lines.append(f"| `{query['query']}` | " + " | ".join(cells) + " |")
    lines += ["", "## Still failing in hybrid", "",
              "Answerable queries with nDCG@10 below 0.5 (refs are `tests/eval/corpus.json` "
              "refs; `got` is the top 5).", ""]
    for variant in ("plain", "also+questions"):
        failing = [f for f in results[variant]["hybrid"]["failing"] if f["ndcg@10"] is not None]
        lines += [f"### {variant} ({len(failing)})", ""]
        if not failing:
            lines.append("None.")
        for f in failing:
            lines.append(f"- {f['id']} ({f['type']}) \"{f['query']}\": nDCG@10 "
                         f"{_fmt(f['ndcg@10'])}; want {', '.join(f['want'])}; "
                         f"got {', '.join(f['got']) or 'nothing'}")
        lines.append("")
    lines += ["## Tokens: memory_context against the whole corpus", "",
              f"All {tokens['live_memories']} live memories in memory_context's compact JSON "
              f"form cost **{tokens['whole_corpus_tokens']}** tokens "
              f"({tokens['whole_corpus_text_tokens']} as bare title + content text), counted "
              "with the cl100k BPE (tiktoken, offline encoding). One memory_context call at its "
              "default 2,000-token budget:", "",
              "| query | memories | tokens_used | omitted | saving |",
              "| --- | --- | --- | --- | --- |"]
    for call in tokens["calls"]:
        lines.append(f"| {call['query'] or '(none: newest first)'} | {call['memories']} | "
                     f"{call['tokens_used']} | {call['omitted']} | {call['saving']}x |")
    if lag:
        lines += ["", "## Write -> searchable by meaning", "",
                  f"Measured by {lag['how']}: p50 {lag['p50_ms']} ms, max {lag['max_ms']} ms over "
                  f"{lag['n']} writes. Lexical search sees a memory at COMMIT."]
    lines += ["", "## Quarantined by the injection screen", "",
              (f"{', '.join(env.quarantined)}: stored but never served, so queries that need "
               "them lose those grades (a false positive of `storage/sanitize.py`'s screen, "
               "measured here as a user would feel it)." if env.quarantined else "None.")]
    if recall:
        from bench.eval_recall import render_recall

        lines += render_recall(recall)
    lines += render_sweep(sweep_rows, env)
    lines += ["", "## Run time", "",
              f"Loading 219 memories through `remember`: {env.timings['load_seconds']} s; "
              f"embedding them: {env.timings['embed_seconds']} s; embedding them with their "
              f"questions: {env.timings['embed_with_questions_seconds']} s.", ""]
    return "\n".join(lines)


def render_sweep(rows: list[dict[str, Any]], env: EvalEnv) -> list[str]:
    if not rows:
        return []
    sw = ["", "## Lexical coverage floor", "",
          "Each row reruns the 57 plain queries with the share of the query's meaningful words "
          "a memory must match changed.", "",
          "| floor | lexical nDCG@10 | lexical P@10 | hybrid nDCG@10 | hybrid P@10 |",
          "| --- | --- | --- | --- | --- |"]
    for row in rows:
        s, h = row["lexical"], row["hybrid"]
        sw.append(f"| {row['coverage']} | {_fmt(s['ndcg@10'])} | {_fmt(s['precision@10'])} | "
                  f"{_fmt(h['ndcg@10'])} | {_fmt(h['precision@10'])} |")
    sw += ["", f"The code uses {env.backend.lexical_min_coverage} (`LEXICAL_MIN_COVERAGE` in "
           "storage/postgres/retrieval/search.py): a memory qualifies when it matches at least "
           f"ceil(floor x n) of the query's n meaningful words, and never more than "
           f"{env.backend.lexical_max_need} need match (`LEXICAL_MAX_NEED`), so floors from "
           "0.34 to 0.5 ask the same of every query."]
    return sw


async def measure_lag(env: EvalEnv, settings: Settings, n: int = 20) -> dict[str, Any]:
    """Write -> searchable-by-meaning delay with a live EmbeddingWorker (LISTEN/NOTIFY)."""
    from memhub.storage.postgres.retrieval.embedding_queue import EmbeddingWorker

    worker = EmbeddingWorker(env.backend, env.backend.embedder,
                             batch=settings.embed_batch_size,
                             max_attempts=settings.embed_max_attempts)
    await worker.start()
    delays = []
    try:
        deadline = time.monotonic() + 10
        while not worker.listening and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for i in range(n):
            text = f"Lag probe {i}: the settlement calendar skips bank holidays in region {i}."
            started = time.perf_counter()
            created = await env.backend.remember(EVAL_PRINCIPAL, "lag-probe", content=text,
                                                 kind="NOTE")
            memory_id = created["memory"]["id"]
            while True:
                found = await env.backend.search(EVAL_PRINCIPAL, "lag-probe", text, limit=1,
                                                 mode="semantic")
                if found["results"] and found["results"][0]["memory"]["id"] == memory_id:
                    break
                if time.perf_counter() - started > 30:
                    raise TimeoutError("memory never became semantically searchable")
                await asyncio.sleep(0.005)
            delays.append((time.perf_counter() - started) * 1000)
    finally:
        await worker.stop()
    delays.sort()
    return {"how": "remember() returning -> the memory is the top semantic hit, polled every "
                   "5 ms, worker woken by NOTIFY",
            "n": n, "p50_ms": round(statistics.median(delays), 1),
            "max_ms": round(delays[-1], 1)}


async def _main(args) -> int:
    async with embedded_eval_env() as (env, settings):
        results = await evaluate_all(env)
        from bench.eval_recall import evaluate_recall

        recall = await evaluate_recall(env)
        sweep_rows = await coverage_sweep(env) if not args.no_sweep else []
        tokens = await token_saving(env)
        lag = await measure_lag(env, settings)
    report = render_report(results, sweep_rows, tokens, env, settings, lag, recall)
    REPORT.write_text(report)
    if args.write_baseline:
        BASELINE.write_text(json.dumps(baseline_of(results), indent=2, sort_keys=True) + "\n")
    print(report)
    return 1 if any(r["overall"]["stale_leaks"]
                    for modes in results.values() for r in modes.values()) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-sweep", action="store_true", help="skip the coverage sweep")
    parser.add_argument("--no-baseline", dest="write_baseline", action="store_false",
                        help="do not overwrite docs/eval/baseline.json")
    raise SystemExit(asyncio.run(_main(parser.parse_args())))


if __name__ == "__main__":
    main()
