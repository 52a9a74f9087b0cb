#!/usr/bin/env python3
"""How close and how fast each query-model recipe (MEMHUB_QUERY_QUANTIZE) is on this machine:
the model alone, no server, no database.

    MEMHUB_EMBED_MODEL_PATH=../shared/models/all-MiniLM-L6-v2 \
        .venv/bin/python -m bench.query_model [--recipes none,int8-block,int8-token,int8]
                                            [--threads 1,2] [--rounds 3] [--out FILE]

Texts: the eval set's queries and its memories' texts (tests/eval/), each embedded as a query.
- Closeness: the cosine of each recipe's vector to the shipped (fp32) model's, mean and worst.
  The fp32 vectors are what every memory is stored with, so this is how far a query drifts
  from the space it is ranked in.
- Speed: one query at a time, the eval queries only (short, like real searches), the recipes
  interleaved query by query so a drift in the machine's speed falls on all of them alike;
  reported as the median per recipe and thread count. Each recipe is loaded exactly as
  embedding.embedder loads the server's query model (the quantized copy made on first use into
  MEMHUB_MODEL_CACHE_DIR, worker threads sleeping between runs).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench.eval_set import load_set
from memhub.config import Settings
from memhub.embedding.embedder import document_text
from memhub.embedding.loading import load_model
from memhub.embedding.quantized_model import RECIPES

ROOT = Path(__file__).resolve().parents[1]


def eval_texts() -> tuple[list[str], list[str]]:
    corpus, queries = load_set()
    memories = [document_text(m.get("title"), m["content"]) for m in corpus["memories"]]
    return [q["query"] for q in queries], memories


def embed(model, text: str) -> np.ndarray:
    return next(iter(model.query_embed([text])))


def closeness(reference: list[np.ndarray], vectors: list[np.ndarray]) -> tuple[float, float]:
    cosines = [float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
               for a, b in zip(reference, vectors, strict=True)]
    return statistics.fmean(cosines), min(cosines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="none," + ",".join(RECIPES),
                        help="comma-separated: none and/or " + ", ".join(RECIPES))
    parser.add_argument("--threads", default="1,2", help="ONNX thread counts to time")
    parser.add_argument("--rounds", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()

    settings = Settings()
    if settings.embed_model_path is None:
        print("set MEMHUB_EMBED_MODEL_PATH to the model's directory", file=sys.stderr)
        return 2
    recipes = [r for r in args.recipes.split(",") if r]
    unknown = [r for r in recipes if r != "none" and r not in RECIPES]
    if unknown:
        print(f"unknown recipe(s) {unknown}; choose from none, {', '.join(RECIPES)}",
              file=sys.stderr)
        return 2
    threads = [int(t) for t in args.threads.split(",") if t]
    queries, memories = eval_texts()
    texts = queries + memories

    def load(recipe: str, n: int):
        # The server's own loader; "none" runs on embed_threads, a copy on query_threads.
        return load_model(settings.model_copy(update={"query_quantize": recipe,
                                                      "query_threads": n,
                                                      "embed_threads": n}),
                          for_queries=True)

    cpu = platform.processor() or platform.machine()
    print(f"{len(queries)} queries + {len(memories)} memories; {cpu}")
    fp32 = load("none", 1)
    reference = [embed(fp32, t) for t in texts]
    report: dict = {"texts": len(texts), "closeness": {}, "query_ms_p50": {}}
    for recipe in (r for r in recipes if r != "none"):  # none is the reference itself
        model = load(recipe, 1)
        vectors = [embed(model, t) for t in texts]
        mean, worst = closeness(reference, vectors)
        report["closeness"][recipe] = {"mean": round(mean, 5), "worst": round(worst, 5)}
        print(f"closeness {recipe:>10}: cosine to fp32 mean {mean:.5f}, worst {worst:.5f}")

    for n in threads:
        models = {recipe: load(recipe, n) for recipe in recipes}
        for model in models.values():  # warm: first runs allocate
            for q in queries[:5]:
                embed(model, q)
        times: dict[str, list[float]] = {recipe: [] for recipe in recipes}
        for _ in range(args.rounds):
            for q in queries:
                for recipe, model in models.items():
                    start = time.perf_counter()
                    embed(model, q)
                    times[recipe].append((time.perf_counter() - start) * 1000)
        report["query_ms_p50"][str(n)] = {r: round(statistics.median(t), 3)
                                          for r, t in times.items()}
        line = ", ".join(f"{r} {statistics.median(t):.2f} ms" for r, t in times.items())
        print(f"one query, {n} thread(s), median of {len(times[recipes[0]])}: {line}")

    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
