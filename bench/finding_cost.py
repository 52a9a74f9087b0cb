#!/usr/bin/env python3
"""What the calling model's help costs: a search with three phrasings (`also`) against a plain
one, and what a hit costs the model that reads it.

    .venv/bin/python -m bench.finding_cost [--rounds 3] [--out PATH]

One fresh memhub (its own process, embedded PostgreSQL, bench/common.py) with the query-vector
cache off (`query_cache_size=0`: every phrasing is embedded, as a new question's would be).
The evaluation corpus (tests/eval/corpus.json, 219 memories) is written through
`memory_remember` over MCP, once plain and once with the questions each memory answers
(tests/eval/memory_questions.json) in a second namespace, and embedded. Then, per round, every
query of tests/eval/queries.json is searched through a real MCP client four ways, in an order
that alternates by query so neither side is always first: `memory_search` plain and with its
three phrasings (tests/eval/phrasings.json), and `recall` the same two ways. Reported: p50 and
p95 of each, and the ratios also/plain from the same run (issue 45's ceiling: 1.6x). The hit
size is the text of a `memory_search` answer (what the model reads) divided by its hits, for
the corpus's memories and for short ones (one line each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from bench.common import (
    default_out,
    local_memhub,
    machine,
    mcp_client,
    provenance,
    summary_ms,
    wait_embedded,
    write_result,
)
from bench.eval_set import load_memory_questions, load_phrasings, load_set

PLAIN_NS, ASKED_NS, SHORT_NS = "finding-plain", "finding-asked", "finding-short"
SHORT = ["Background jobs run on PostgreSQL with FOR UPDATE SKIP LOCKED.",
         "Amounts are integer minor units; never floats.",
         "Production deploys go out Tuesdays and Thursdays after 10:00 UTC.",
         "Internal services authenticate with short-lived JWTs from authd.",
         "Outbound webhooks are signed with HMAC-SHA256 of the raw body.",
         "Secrets live in AWS Secrets Manager, read at start-up.",
         "Failed jobs retry five times with exponential backoff.",
         "Logs are JSON lines with a request id on every line.",
         "Schema migrations run with a five second lock timeout.",
         "Feature flags are read from the flags table, cached 30 s."]


async def load(client, namespace: str, corpus: dict[str, Any],
               questions: dict[str, list[str]] | None) -> None:
    ids: dict[str, str] = {}
    for memory in corpus["memories"]:
        args = {"namespace": namespace, "content": memory["content"], "kind": memory["kind"],
                "title": memory.get("title"), "tags": memory.get("tags"),
                "supersedes": [ids[r] for r in memory.get("supersedes", [])] or None,
                "questions": (questions or {}).get(memory["ref"])}
        made = await client.call_tool("memory_remember",
                                      {k: v for k, v in args.items() if v is not None})
        ids[memory["ref"]] = made.structured_content["memory"]["id"]


async def timed(client, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    return (time.perf_counter() - started) * 1000, result


def bytes_per_hit(result) -> float | None:
    hits = len(result.structured_content["results"])
    return len(result.content[0].text.encode()) / hits if hits else None


async def measure(rounds: int) -> dict[str, Any]:
    corpus, queries = load_set()
    phrasings = load_phrasings()
    queries = [q for q in queries if q["id"] in phrasings]
    with local_memhub(query_cache_size=0) as (base, _settings, _dsn):
        async with mcp_client(base) as client:
            await load(client, PLAIN_NS, corpus, None)
            await load(client, ASKED_NS, corpus, load_memory_questions())
            for content in SHORT:
                await client.call_tool("memory_remember",
                                       {"namespace": SHORT_NS, "content": content})
            await wait_embedded(client)
            times: dict[str, list[float]] = {k: [] for k in (
                "search_plain", "search_also", "recall_plain", "recall_also",
                "search_also_questions")}
            sizes: list[float] = []
            for round_ in range(rounds):
                for i, query in enumerate(queries):
                    base_args = {"namespace": PLAIN_NS, "query": query["query"]}
                    also = {**base_args, "also": phrasings[query["id"]]}
                    runs = [("search_plain", "memory_search", base_args),
                            ("search_also", "memory_search", also),
                            ("recall_plain", "recall", base_args),
                            ("recall_also", "recall", also),
                            ("search_also_questions", "memory_search",
                             {**also, "namespace": ASKED_NS})]
                    if (i + round_) % 2:
                        runs.reverse()
                    for name, tool, args in runs:
                        ms, result = await timed(client, tool, args)
                        times[name].append(ms)
                        if name == "search_plain" and round_ == 0:
                            size = bytes_per_hit(result)
                            if size is not None:
                                sizes.append(size)
            short = await client.call_tool("memory_search", {
                "namespace": SHORT_NS, "query": "how do we run things in production"})
    summary = {name: summary_ms(values) for name, values in times.items()}
    return {
        "queries": len(queries), "rounds": rounds, "latency_ms": summary,
        "ratio_p50": {
            "search_also/plain": round(summary["search_also"]["p50"]
                                       / summary["search_plain"]["p50"], 3),
            "recall_also/plain": round(summary["recall_also"]["p50"]
                                       / summary["recall_plain"]["p50"], 3),
            "search_also_questions/plain": round(summary["search_also_questions"]["p50"]
                                                 / summary["search_plain"]["p50"], 3)},
        "bytes_per_hit": {"corpus_mean": round(sum(sizes) / len(sizes), 1),
                          "short_memories": round(bytes_per_hit(short) or 0, 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    report = {"provenance": provenance(), "machine": machine(),
              **asyncio.run(measure(args.rounds))}
    path = write_result(args.out or default_out("finding-cost"), report)
    print(json.dumps({k: report[k] for k in ("latency_ms", "ratio_p50", "bytes_per_hit")},
                     indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
