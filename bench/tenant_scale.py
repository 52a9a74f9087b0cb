"""bench/tenants.py's scale patterns: a small tenant beside a large one, pgvector's filtered
HNSW scan, and 300,000 memories over 100 namespaces."""

from __future__ import annotations

import asyncio
import functools
import os
import random
import statistics
import time

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench import project_corpus, tenant_corpus
from bench.common import local_memhub, mcp_client, summary_ms, wait_embedded
from bench.tenant_probes import Calls, note, searches, write_notes

K = 10
QUESTION_PENALTY = 0.1  # storage/retrieval_guard.QUESTION_PENALTY, as the semantic leg adds it
EXACT = """
SELECT id FROM (
    SELECT m.id, (e.embedding <=> %(v)s)::float8 AS d
      FROM memory_embeddings e
      JOIN memories m ON m.id = e.memory_id AND m.current_revision = e.revision
     WHERE e.namespace = %(ns)s AND m.status = 'ACTIVE' AND NOT m.quarantined
    UNION ALL
    SELECT m.id, (q.embedding <=> %(v)s)::float8 + %(penalty)s
      FROM memory_question_embeddings q
      JOIN memories m ON m.id = q.memory_id AND m.current_revision = q.revision
     WHERE q.namespace = %(ns)s AND m.status = 'ACTIVE' AND NOT m.quarantined
) x GROUP BY id ORDER BY min(d), id LIMIT %(k)s
"""
# The content leg alone, as pgvector's filtered HNSW scan serves it (owner, no RLS).
FILTERED = """
SELECT memory_id FROM memory_embeddings WHERE namespace = %(ns)s
 ORDER BY embedding <=> %(v)s LIMIT 30
"""
EXACT_CONTENT = """
SELECT memory_id FROM memory_embeddings WHERE namespace = %(ns)s
 ORDER BY (embedding <=> %(v)s) + 0 LIMIT 30
"""


def _query_vectors(settings, texts: list[str]) -> list[np.ndarray]:
    from memhub.embedding.loading import load_model

    model = load_model(settings, for_queries=True)  # the server's query model
    return [next(iter(model.query_embed([t]))) for t in texts]


def exact_top(dsn: str, namespace: str, vectors: list[np.ndarray]) -> list[list[str]]:
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        return [[str(r[0]) for r in conn.execute(EXACT, {"v": v, "ns": namespace,
                                                          "penalty": QUESTION_PENALTY,
                                                          "k": K}).fetchall()]
                for v in vectors]


def overlap(got: list[list[str]], want: list[list[str]]) -> float:
    """Mean share of each `want` top 10 found in the `got` top 10."""
    shares = [len(set(g[:K]) & set(w[:K])) / max(1, len(w[:K])) for g, w in zip(got, want,
                                                                                strict=True)]
    return round(statistics.mean(shares), 4)


@functools.lru_cache(maxsize=2)
def corpus(size: int, model_path: str) -> tuple[list[dict], np.ndarray]:
    """`size` distinct notes and their vectors (computed once, then read from the cache)."""
    items = tenant_corpus.notes(size, seed=1)
    return items, tenant_corpus.vectors(items, model_path)


def load_with_vectors(dsn: str, namespace: str, count: int, offset: int, model: str,
                      model_path: str, size: int, analyze: bool = True) -> None:
    """`count` notes of the corpus of `size` (from `offset`, wrapping; at most `size`: a
    namespace's active contents are distinct) into `namespace`, with their precomputed
    vectors."""
    items, vecs = corpus(size, model_path)
    picked = [(offset + i) % len(items) for i in range(min(count, len(items)))]
    tenant_corpus.bulk_load(dsn, namespace, [items[i] for i in picked], vecs[picked], model,
                            analyze=analyze)


async def _interleaved(base: str, namespace: str, texts: list[str], calls: Calls) -> None:
    """Semantic and hybrid for each text, alternating, so a slow minute hits both alike."""
    async with mcp_client(base) as client:
        for text in texts:
            for mode in ("semantic", "hybrid"):
                await calls.call(client, mode, "memory_search",
                                 {"namespace": namespace, "query": text, "mode": mode})


def hnsw_sweep(dsn: str, namespaces: dict[str, int], vectors: list[np.ndarray]) -> list[dict]:
    """Recall of the content leg's top 10 against an exact scan, and its median execution
    time, per namespace and pgvector setting."""
    rows = []
    combos = [(ef, it, mst) for ef in (40, 100, 200) for it in ("off", "relaxed_order")
              for mst in (20000, 100000) if not (it == "off" and mst != 20000)]
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        conn.execute("SET enable_seqscan = off")
        for ns, size in namespaces.items():
            truth = [[r[0] for r in conn.execute(EXACT_CONTENT, {"v": v, "ns": ns}).fetchall()]
                     for v in vectors]
            exact_ms = [_explain_ms(conn, EXACT_CONTENT, {"v": v, "ns": ns}) for v in vectors]
            rows.append({"namespace_size": size, "strategy": "exact", "recall@10": 1.0,
                         "ms_p50": round(statistics.median(exact_ms), 2)})
            for ef, it, mst in combos:
                conn.execute(f"SET hnsw.ef_search = {ef}")
                conn.execute(f"SET hnsw.iterative_scan = {it}")
                conn.execute(f"SET hnsw.max_scan_tuples = {mst}")
                conn.execute("SET enable_sort = off")  # the index, whatever the estimate
                got, ms = [], []
                for v in vectors:
                    got.append([r[0] for r in conn.execute(FILTERED, {"v": v, "ns": ns})])
                    ms.append(_explain_ms(conn, FILTERED, {"v": v, "ns": ns}))
                conn.execute("RESET enable_sort")
                recall = statistics.mean(len(set(g[:K]) & set(t[:K])) / K
                                         for g, t in zip(got, truth, strict=True))
                rows.append({"namespace_size": size, "strategy": "hnsw", "ef_search": ef,
                             "iterative_scan": it, "max_scan_tuples": mst,
                             "recall@10": round(recall, 4),
                             "ms_p50": round(statistics.median(ms), 2)})
            print(f"  sweep {ns}: {rows[-1]}", flush=True)
    return rows


def _explain_ms(conn, sql: str, params: dict) -> float:
    plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
    return plan[0]["Execution Time"]


async def scale(args, overrides: dict) -> dict:
    model_path = os.environ["MEMHUB_EMBED_MODEL_PATH"]
    rng = random.Random(9)
    texts = [t for _, t in project_corpus.queries(args.queries, seed=41)]
    with local_memhub(**overrides) as (base, settings, dsn):
        async with mcp_client(base) as client:
            await wait_embedded(client)
        await write_notes(base, "small", [note(i, rng) for i in range(args.small)])
        async with mcp_client(base) as client:
            await wait_embedded(client)
        vectors = await asyncio.to_thread(_query_vectors, settings, texts)
        truth = exact_top(dsn, "small", vectors)
        await searches(base, "small", texts[:10], calls=Calls())  # warm up
        alone = Calls()
        await _interleaved(base, "small", texts, alone)
        alone_ids = {m: await searches(base, "small", texts, m) for m in ("semantic", "hybrid")}
        started = time.monotonic()
        await asyncio.to_thread(load_with_vectors, dsn, "neighbour", args.neighbour, 0,
                                settings.embed_model, model_path, args.corpus)
        async with mcp_client(base) as client:
            await wait_embedded(client)  # the word statistics recounted
        load_s = time.monotonic() - started
        beside = Calls()
        await searches(base, "small", texts[:10], calls=Calls())
        await _interleaved(base, "small", texts, beside)
        beside_ids = {m: await searches(base, "small", texts, m) for m in ("semantic", "hybrid")}
        big_texts = [t for _, t in project_corpus.queries(2 * args.queries, seed=43)]
        big = Calls()
        await _interleaved(base, "neighbour", big_texts, big)
        small = {
            "semantic_overlap_with_exact": {"alone": overlap(alone_ids["semantic"], truth),
                                            "beside": overlap(beside_ids["semantic"], truth)},
            "hybrid_overlap_with_alone": overlap(beside_ids["hybrid"], alone_ids["hybrid"]),
            "semantic_overlap_with_alone": overlap(beside_ids["semantic"],
                                                   alone_ids["semantic"]),
            "latency_ms": {mode: {"alone": summary_ms(alone.latency[mode]),
                                  "beside": summary_ms(beside.latency[mode])}
                           for mode in ("semantic", "hybrid")},
        }
        for mode in ("semantic", "hybrid"):
            lat = small["latency_ms"][mode]
            lat["beside_over_alone_p50"] = round(lat["beside"]["p50"] / lat["alone"]["p50"], 3)
        neighbour = {mode: summary_ms(big.latency[mode]) for mode in ("semantic", "hybrid")}
        neighbour["hybrid_over_semantic_p50"] = round(
            neighbour["hybrid"]["p50"] / neighbour["semantic"]["p50"], 3)
        sweep_spaces = {"small": args.small}
        for n, size in enumerate(int(x) for x in args.sweep_sizes.split(",") if x):
            await asyncio.to_thread(load_with_vectors, dsn, f"mid-{size}", size,
                                    (n + 1) * 7919, settings.embed_model, model_path,
                                    args.corpus)
            sweep_spaces[f"mid-{size}"] = size
        sweep = await asyncio.to_thread(hnsw_sweep, dsn, sweep_spaces, vectors[:40])
        return {"small": small, "neighbour": neighbour,
                "neighbour_load": f"{args.neighbour} memories by COPY with precomputed "
                                  f"vectors (bench/tenant_corpus.py), {load_s:.0f} s",
                "hnsw_sweep": {"table": args.neighbour + sum(sweep_spaces.values()),
                               "rows": sweep}}


def many_sizes(total: int, count: int, cap: int) -> list[int]:
    """`count` namespace sizes, Zipf-like (the i-th ~ 1/i), adding up to about `total`, none
    over `cap` (the corpus: a namespace's contents are distinct); what a cap cuts goes to the
    next sizes."""
    weights = [1 / (i + 1) for i in range(count)]
    sizes, left = [], total
    for i, w in enumerate(weights):
        share = left * w / sum(weights[i:])
        sizes.append(max(20, min(cap, round(share))))
        left -= sizes[-1]
    return sizes


async def many(args, overrides: dict) -> dict:
    model_path = os.environ["MEMHUB_EMBED_MODEL_PATH"]
    sizes = many_sizes(args.many_total, args.many_namespaces, args.corpus)
    with local_memhub(**overrides) as (base, settings, dsn):
        started = time.monotonic()
        for i, size in enumerate(sizes):
            await asyncio.to_thread(load_with_vectors, dsn, f"ns-{i:03d}", size,
                                    (i * 7919) % args.corpus, settings.embed_model,
                                    model_path, args.corpus, analyze=i == len(sizes) - 1)
        async with mcp_client(base) as client:
            await wait_embedded(client)
        load_s = time.monotonic() - started
        classes = {}
        for i, size in enumerate(sizes):
            label = next(c for c in (50_000, 10_000, 3000, 1000, 0) if size >= c)
            classes.setdefault(label, []).append((f"ns-{i:03d}", size))
        texts = [t for _, t in project_corpus.queries(100, seed=51)]
        out = {}
        rng = random.Random(10)
        for _label, spaces in sorted(classes.items()):
            ns, size = spaces[0]
            calls = Calls()
            await _interleaved(base, ns, texts, calls)
            writes = [note(10**6 + i, rng) for i in range(100)]
            t0 = time.monotonic()
            async with mcp_client(base) as client:
                for item in writes:
                    await calls.call(client, "remember", "memory_remember",
                                     {"namespace": ns, **item})
            out[f"{ns} ({size})"] = {
                "namespaces_in_class": len(spaces),
                "search_ms": {m: summary_ms(calls.latency[m]) for m in ("semantic", "hybrid")},
                "writes_per_s_one_client": round(len(writes) / (time.monotonic() - t0), 1),
                "errors": dict(calls.errors)}
            print(f"  {ns} ({size}): {out[f'{ns} ({size})']}", flush=True)
        return {"namespaces": len(sizes), "memories": sum(sizes),
                "sizes": {"largest": sizes[0], "smallest": sizes[-1]},
                "load_s": round(load_s), "by_size": out}
