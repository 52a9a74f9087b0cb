#!/usr/bin/env python3
"""SciFact (BEIR test split) through memhub's real search path, per mode.

    .venv/bin/python -m bench.retrieval [--scifact-dir DIR] [--embed-threads 2]
                                      [--semantic-max-distance D] [--out FILE]

Each abstract becomes one memory (title + abstract, kind FACT) written with `memory_remember`
through a real MCP client over HTTP; embeddings come from the durable embedding queue; each of
the 300 claims is run through `memory_search` in every mode with limit=100. nDCG@10 and
Recall@100 are computed by ranx and printed beside the published BM25 and bge-small figures;
the report (with the date, commit and machine) goes to bench/results/ unless --out says
otherwise.
Needs MEMHUB_EMBED_MODEL_PATH (the ONNX model directory) for the semantic and hybrid modes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ranx import Qrels, Run, evaluate
from tqdm import tqdm

from bench.common import (
    default_out,
    local_memhub,
    machine,
    mcp_client,
    provenance,
    wait_embedded,
    write_result,
)

ROOT = Path(__file__).resolve().parents[1]

NAMESPACE = "scifact"
PUBLISHED = {"BM25 (Anserini)": (0.679, 0.925), "bge-small-en-v1.5": (0.713, 0.945)}
MODES = ("lexical", "semantic", "hybrid")


def convert(scifact_dir: Path, out: Path) -> None:
    subprocess.run(
        [sys.executable, str(scifact_dir / "convert_scifact.py"), "--split", "test", "--out",
         str(out)],
        check=True, capture_output=True,
    )


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def load(base_url: str, docs: list[dict], concurrency: int = 8) -> float:
    queue: asyncio.Queue = asyncio.Queue()
    for doc in docs:
        queue.put_nowait(doc)
    bar = tqdm(total=len(docs), desc="remember", unit="doc")
    started = time.perf_counter()

    async def worker() -> None:
        async with mcp_client(base_url) as client:
            while not queue.empty():
                doc = queue.get_nowait()
                title, _, abstract = doc["text"].partition("\n")
                await client.call_tool("memory_remember", {
                    "namespace": NAMESPACE,
                    "content": abstract or title,
                    "title": title[:500] or None,
                    "kind": "FACT",
                    "key": f"scifact-{doc['id']}",
                    "client_request_id": f"scifact-{doc['id']}",
                })
                bar.update(1)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    bar.close()
    return time.perf_counter() - started


async def run_queries(base_url: str, queries: list[dict], mode: str) -> tuple[dict, bool]:
    run: dict[str, dict[str, float]] = {}
    degraded = False
    async with mcp_client(base_url) as client:
        for query in tqdm(queries, desc=f"search {mode}", unit="q"):
            result = await client.call_tool("memory_search", {
                "namespace": NAMESPACE, "query": query["text"][:1000], "limit": 100, "mode": mode,
            }, raise_on_error=False)
            if result.is_error:
                run[query["id"]] = {"__nothing__": 0.0}
                degraded = True
                continue
            payload = result.structured_content
            degraded = degraded or bool(payload.get("degraded"))
            hits = {}
            for rank, hit in enumerate(payload["results"]):
                key = hit["memory"]["key"] or ""
                hits[key.removeprefix("scifact-")] = float(len(payload["results"]) - rank)
            # ranx needs a non-empty run per query; an empty answer scores 0 everywhere.
            run[query["id"]] = hits or {"__nothing__": 0.0}
    return run, degraded


async def bench(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        convert(Path(args.scifact_dir), data)
        docs = read_jsonl(data / "corpus.jsonl")
        queries = read_jsonl(data / "queries.jsonl")
        qrels_lines = (data / "qrels.tsv").read_text().splitlines()[1:]
    qrels_rows = [line.split("\t") for line in qrels_lines]
    qrels: dict[str, dict[str, int]] = {}
    for qid, doc_id, grade in qrels_rows:
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    queries = [q for q in queries if q["id"] in qrels]

    overrides = {"embed_batch_size": 64, "embed_threads": args.embed_threads}
    if args.semantic_max_distance is not None:
        overrides["semantic_max_distance"] = args.semantic_max_distance
        overrides["semantic_neighbour_max_distance"] = max(args.semantic_max_distance, 1.0)
    with local_memhub(**overrides) as (base_url, settings, _):
        load_seconds = await load(base_url, docs)
        async with mcp_client(base_url) as client:
            embed_wait = await wait_embedded(client)
        results = {}
        for mode in MODES:
            run, degraded = await run_queries(base_url, queries, mode)
            scores = evaluate(Qrels(qrels), Run(run), ["ndcg@10", "recall@100"])
            results[mode] = {
                "ndcg@10": round(float(scores["ndcg@10"]), 4),
                "recall@100": round(float(scores["recall@100"]), 4),
                "degraded": degraded,
            }
            print(f"{mode:9s} nDCG@10={results[mode]['ndcg@10']:.3f} "
                  f"Recall@100={results[mode]['recall@100']:.3f}")
    return {
        "dataset": "SciFact (BEIR test split): 5,183 abstracts, 300 claims, 339 qrels",
        "machine": machine(),
        **provenance(),
        "model": settings.embed_model,
        "semantic_max_distance": settings.semantic_max_distance,
        "embed_threads": args.embed_threads,
        "load_seconds": round(load_seconds, 1),
        "embedding_drain_seconds": round(embed_wait, 1),
        "modes": results,
        "published": {k: {"ndcg@10": v[0], "recall@100": v[1]} for k, v in PUBLISHED.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scifact-dir", default=str(ROOT.parent / "shared" / "bench" / "scifact"))
    parser.add_argument("--embed-threads", type=int, default=2,
                        help="MEMHUB_EMBED_THREADS for the server (default: both cores)")
    parser.add_argument("--semantic-max-distance", type=float, default=None,
                        help="override MEMHUB_SEMANTIC_MAX_DISTANCE (2 = no gate)")
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/scifact-DATE-COMMIT.json)")
    args = parser.parse_args()
    report = asyncio.run(bench(args))
    print(f"written to {write_result(args.out or default_out('scifact'), report)}")
    print("\n| system | nDCG@10 | Recall@100 |\n| --- | --- | --- |")
    for name, (ndcg, rec) in PUBLISHED.items():
        print(f"| {name} (published) | {ndcg:.3f} | {rec:.3f} |")
    for mode, row in report["modes"].items():
        print(f"| memhub {mode} | {row['ndcg@10']:.3f} | {row['recall@100']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
