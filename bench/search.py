#!/usr/bin/env python3
"""Search latency and write throughput at 1k, 10k and 100k memories in one namespace.

    .venv/bin/python -m bench.search [--sizes 1000,10000,100000] [--queries 200]
                                   [--embed-threads N]
                                   [--query-quantize int8-block|int8-token|int8|none]
                                   [--out FILE]

What it measures, per corpus size:
- SQL time of each retrieval leg, from EXPLAIN (ANALYZE) of the exact statements the server
  runs (storage/postgres/sql/search.sql), as role memhub_app under the same RLS scope and
  settings; median of 50 queries. The lexical leg's statements are summed.
- End-to-end `memory_search` (mode=hybrid) through a real MCP client over HTTP, query embedding
  included (every query is distinct, so the query-embedding cache never answers): p50/p95/p99;
  the same with one repeated query (the cache answers), with mode=lexical and mode=semantic,
  and a `stats` call.
- The same hybrid searches over a namespace of ten memories (`e2e_floor_ms`), in the same
  minutes: what a search costs before there is a corpus to rank.
- The machine's speed just before each size's measurements (`machine_speed`: a fixed Python
  loop and one query embedding alone), since the speed of a shared VM varies by the hour.
- End-to-end `memory_context` at its default budget (2,000 tokens), with a query (hybrid search
  at the budget's depth, then packing) and without one (the newest 300 memories, then
  packing): p50/p95/p99.
And once: write throughput of `memory_remember` through MCP, the time for the embedding worker
to drain those writes, and the commit -> semantically-searchable delay.

The first 1,000 memories are written through MCP (that is the throughput measured); growing to
10k and 100k uses one bulk INSERT of the same synthetic generator followed by the real
embedding worker, because writing 99k memories one call at a time measures nothing new.
The report (with the date, commit and machine) goes to bench/results/ unless --out says
otherwise. Needs MEMHUB_EMBED_MODEL_PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time

import psycopg

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

NAMESPACE = "bench"
CONTEXT_CALLS = 50  # memory_context calls per size, with a query and without
FLOOR_NAMESPACE = "bench-floor"  # a few memories: the same search without a corpus to search
FLOOR_MEMORIES = 10
COMPONENTS = """billing ledger invoices webhooks payouts refunds disputes onboarding kyc sso auth
sessions search indexer scheduler queue worker cache gateway router migrations reporting exports
notifications email sms audit metrics tracing logging alerts deploys frontend dashboard api sdk
cli importer reconciler pricing tax currency fx settlements chargebacks fraud risk limits
quotas tenants accounts users roles permissions""".split()
TECH = """PostgreSQL Redis Kafka RabbitMQ S3 Kubernetes Terraform nginx Envoy gRPC GraphQL REST
FastAPI Django React TypeScript Go Rust Python Celery Airflow dbt Snowflake BigQuery Prometheus
Grafana Sentry OpenTelemetry Vault Okta SAML OAuth JWT mTLS TLS Docker Helm ArgoCD GitHub
Jenkins pytest Playwright Cypress pgvector pgbouncer Patroni Debezium ClickHouse""".split()
VERBS = """uses replaced retries batches caches shards partitions encrypts signs validates
throttles deduplicates streams indexes archives compacts rotates monitors schedules buffers
normalises migrates exports reconciles""".split()
QUALIFIERS = """nightly hourly per-tenant idempotent append-only eventually-consistent
read-only write-ahead blue-green canary zero-downtime backpressured rate-limited sharded
versioned encrypted""".split()
KINDS = ["DECISION", "FACT", "CONVENTION", "NOTE", "TODO"]


def synthetic(i: int, rng: random.Random) -> dict:
    comp, comp2 = rng.sample(COMPONENTS, 2)
    tech, tech2 = rng.sample(TECH, 2)
    words = [comp, rng.choice(VERBS), tech, "for", rng.choice(QUALIFIERS), comp2]
    ident = f"{comp.upper()}_{rng.choice(QUALIFIERS).upper().replace('-', '_')}_{i}"
    content = (
        f"The {comp} service {' '.join(words[1:])} work; {tech2} handles the "
        f"{rng.choice(QUALIFIERS)} path. Setting {ident} controls it (ticket PS-{i})."
    )
    return {
        "title": f"{comp} {words[1]} {tech}",
        "content": content,
        "kind": KINDS[i % len(KINDS)],
        "tags": [comp, tech.lower()],
    }


def queries(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = set()
    while len(out) < n:
        out.add(" ".join([rng.choice(COMPONENTS), rng.choice(VERBS), rng.choice(TECH),
                          rng.choice(QUALIFIERS), str(rng.randint(0, 10**6))]))
    return sorted(out)


async def write_through_mcp(base_url: str, count: int, concurrency: int = 4) -> float:
    rng = random.Random(1)
    items = [synthetic(i, rng) for i in range(count)]
    queue: asyncio.Queue = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    started = time.perf_counter()

    async def worker():
        async with mcp_client(base_url) as client:
            while not queue.empty():
                item = queue.get_nowait()
                await client.call_tool("memory_remember", {"namespace": NAMESPACE, **item})

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def bulk_insert(dsn: str, start: int, stop: int, *, namespace: str = NAMESPACE,
                make=None) -> None:
    """Memories start..stop of `make(i)` (default: this module's generator) into `namespace`
    by COPY, with their revision rows and embedding jobs."""
    from memhub.storage.memory_input import content_hash
    from memhub.storage.sanitize import sanitize_text

    rng = random.Random(start)
    make = make or (lambda i: synthetic(i, rng))
    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(
            "COPY memories (namespace, kind, title, content, tags, content_hash, author_client)"
            " FROM STDIN"
        ) as copy:
            for i in range(start, stop):
                item = make(i)
                content = sanitize_text(item["content"])
                copy.write_row((namespace, item["kind"], item["title"], content, item["tags"],
                                content_hash(content), "bench"))
        conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories m WHERE namespace = %s AND NOT EXISTS"
            " (SELECT 1 FROM memory_revisions r WHERE r.memory_id = m.id)", [namespace])
        conn.execute(
            "INSERT INTO embedding_jobs (namespace, memory_id, revision)"
            " SELECT namespace, id, current_revision FROM memories m WHERE namespace = %s"
            " AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = m.id)"
            " AND NOT EXISTS (SELECT 1 FROM embedding_jobs j WHERE j.memory_id = m.id)",
            [namespace])
        conn.execute("ANALYZE memories")
        conn.execute("ANALYZE memory_embeddings")


class _Explaining:
    """An async connection that runs EXPLAIN (ANALYZE) of each statement before the statement
    itself and adds up PostgreSQL's execution times: the lexical leg's SQL time however many
    statements it takes (storage/postgres/retrieval/lexical_leg.py)."""

    def __init__(self, conn: psycopg.AsyncConnection):
        self.conn, self.ms = conn, 0.0

    async def execute(self, sql: str, params: dict, prepare: bool | None = None):
        cur = await self.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params,
                                      prepare=prepare)
        self.ms += (await cur.fetchone())["QUERY PLAN"][0]["Execution Time"]
        return await self.conn.execute(sql, params, prepare=prepare)


async def sql_times(dsn: str, settings, texts: list[str], *, namespace: str = NAMESPACE
                    ) -> dict[str, float]:
    """Median EXPLAIN ANALYZE execution time (ms) of each leg over `texts`, as memhub_app under
    the server's search settings. The lexical leg's statements are summed."""
    from pgvector.psycopg import register_vector_async
    from psycopg.rows import dict_row

    from memhub.embedding.loading import load_model
    from memhub.storage.postgres.queries import q
    from memhub.storage.postgres.retrieval.lexical_leg import lexical_leg
    from memhub.storage.postgres.retrieval.search import (
        LEXICAL_CANDIDATES,
        LEXICAL_MAX_NEED,
        LEXICAL_MIN_COVERAGE,
        MIN_LEG_DEPTH,
        search_gucs,
    )

    model = load_model(settings, for_queries=True)  # the server's query model
    times: dict[str, list[float]] = {"lexical": [], "semantic": []}
    params = {"namespace": namespace, "kinds": None, "tags": None, "depth": MIN_LEG_DEPTH}
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True,
                                                     row_factory=dict_row) as conn:
        await register_vector_async(conn)
        await conn.execute("SET ROLE memhub_app")
        for text in texts:
            vector = next(iter(model.query_embed([text])))
            async with conn.transaction():
                await conn.execute("SELECT set_config('memhub.namespaces', %s, true)",
                                   [namespace])
                for name, value in search_gucs(settings.hnsw_ef_search).items():
                    await conn.execute("SELECT set_config(%s, %s, true)", [name, value])
                explaining = _Explaining(conn)
                await lexical_leg(explaining, text, params, min_coverage=LEXICAL_MIN_COVERAGE,
                                  max_need=LEXICAL_MAX_NEED, candidates=LEXICAL_CANDIDATES)
                times["lexical"].append(explaining.ms)
                explaining.ms = 0.0
                await explaining.execute(q("search.semantic"), {
                    **params, "embedding": vector, "model": settings.embed_model,
                    "question_penalty": 0.1})
                times["semantic"].append(explaining.ms)
    return {leg: round(statistics.median(v), 3) for leg, v in times.items()}


async def _timed_calls(base_url: str, calls: list[tuple[str, dict]]) -> dict[str, float]:
    """Latency summary of `calls` ((tool, arguments), one after another) through one client."""
    latencies = []
    async with mcp_client(base_url) as client:
        await client.call_tool("memory_search", {"namespace": NAMESPACE, "query": "warm up"})
        for tool, arguments in calls:
            started = time.perf_counter()
            await client.call_tool(tool, arguments)
            latencies.append((time.perf_counter() - started) * 1000)
    return summary_ms(latencies)


async def e2e_times(base_url: str, texts: list[str], mode: str = "hybrid",
                    repeat: bool = False, namespace: str = NAMESPACE) -> dict[str, float]:
    """memory_search latency through MCP. repeat=True asks the first query every time (the
    query-embedding cache answers); otherwise every query is new and is embedded."""
    return await _timed_calls(base_url, [
        ("memory_search", {"namespace": namespace, "query": texts[0] if repeat else text,
                           "mode": mode})
        for text in texts])


async def write_floor(base_url: str) -> None:
    """FLOOR_NAMESPACE's few memories (the benchmark's kind), embedded before they count."""
    rng = random.Random(2)
    async with mcp_client(base_url) as client:
        for i in range(FLOOR_MEMORIES):
            await client.call_tool("memory_remember", {"namespace": FLOOR_NAMESPACE,
                                                       **synthetic(10**7 + i, rng)})
        await wait_embedded(client)


def machine_speed(model, texts: list[str]) -> dict[str, float]:
    """A shared VM's speed varies by tens of percent from hour to hour, so each size's
    figures carry two references measured in the benchmark's process just before them, with
    the server idle: a fixed pure-Python loop, and one query embedded by the server's query
    model alone (`model`: the same recipe and threads; medians). Compare runs through these,
    not by their latencies alone."""
    loops = []
    for _ in range(9):
        started = time.perf_counter()
        sum(i * i for i in range(300_000))
        loops.append((time.perf_counter() - started) * 1000)
    next(iter(model.query_embed(["warm up"])))
    embeds = []
    for text in texts:
        started = time.perf_counter()
        next(iter(model.query_embed([text])))
        embeds.append((time.perf_counter() - started) * 1000)
    return {"python_loop_ms": round(statistics.median(loops), 2),
            "query_embedding_alone_ms": round(statistics.median(embeds), 2)}


async def context_times(base_url: str, texts: list[str], with_query: bool) -> dict[str, float]:
    """memory_context latency through MCP at the default budget: for each query text, or
    without a query (the namespace's newest memories)."""
    return await _timed_calls(base_url, [
        ("memory_context", {"namespace": NAMESPACE, **({"query": text} if with_query else {})})
        for text in texts])


async def call_overhead(base_url: str, calls: int = 200) -> dict[str, float]:
    """The floor under every tool call: `stats` (it counts the namespace's memories, so it grows
    with the corpus) through the same client."""
    return await _timed_calls(base_url, [("stats", {})] * calls)


async def searchable_delay(base_url: str, samples: int = 10) -> dict[str, float]:
    """Seconds from a write's commit until semantic search returns it."""
    delays = []
    async with mcp_client(base_url) as client:
        for i in range(samples):
            text = f"Quarterly llama grooming rota number {i} lives in the barn wiki"
            written = await client.call_tool("memory_remember", {"namespace": "delay",
                                                                 "content": text})
            target = written.structured_content["memory"]["id"]
            started = time.perf_counter()
            while time.perf_counter() - started < 60:
                found = await client.call_tool("memory_search", {
                    "namespace": "delay", "query": text, "mode": "semantic", "limit": 5})
                if any(r["memory"]["id"] == target for r in found.structured_content["results"]):
                    break
                await asyncio.sleep(0.01)
            delays.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(delays), 3), "max_s": round(max(delays), 3)}


async def bench(args) -> dict:
    sizes = [int(s) for s in args.sizes.split(",")]
    texts = queries(args.queries)
    report: dict = {"machine": machine(), **provenance(), "sizes": {},
                    "queries_per_size": len(texts)}
    overrides: dict = {"query_quantize": args.query_quantize}
    if args.embed_threads is not None:
        overrides["embed_threads"] = args.embed_threads
    if args.query_threads is not None:
        overrides["query_threads"] = args.query_threads
    with local_memhub(**overrides) as (base_url, settings, dsn):
        report["embed_threads"] = settings.embed_threads  # what the server ran with
        report["query_quantize"] = settings.query_quantize
        report["query_threads"] = settings.query_threads
        if settings.embed_model_path is None:
            raise SystemExit("set MEMHUB_EMBED_MODEL_PATH to the model directory")
        from memhub.embedding.loading import load_model

        query_model = load_model(settings, for_queries=True)  # machine_speed's reference
        first = min(sizes[0], 1000)
        seconds = await write_through_mcp(base_url, first)
        async with mcp_client(base_url) as client:
            drain = await wait_embedded(client)
        report["writes"] = {
            "count": first,
            "writes_per_s": round(first / seconds, 1),
            "embedding_drain_s_after_writes": round(drain, 2),
            "end_to_end_per_s": round(first / (seconds + drain), 1),
        }
        report["searchable_delay"] = await searchable_delay(base_url)
        await write_floor(base_url)
        loaded = first
        for size in sizes:
            if size > loaded:
                started = time.perf_counter()
                bulk_insert(dsn, loaded, size)
                async with mcp_client(base_url) as client:
                    await wait_embedded(client, progress=lambda n: print(
                        f"\r  embedding: {n} pending   ", end="", flush=True))
                print()
                report.setdefault("bulk_load_s", {})[size] = round(time.perf_counter() - started)
                loaded = size
            speed = machine_speed(query_model, texts[-40:])
            sql = await sql_times(dsn, settings, texts[:50])
            e2e = await e2e_times(base_url, texts)
            report["sizes"][size] = {
                "machine_speed": speed,
                "sql_ms": sql,
                "e2e_ms": e2e,
                # The same searches of a namespace of ten memories, in the same minutes: what
                # every search pays before the corpus's size counts (the token check, HTTP and
                # MCP, the query embedding, two transactions, the response).
                "e2e_floor_ms": await e2e_times(base_url, texts, namespace=FLOOR_NAMESPACE),
                "e2e_repeated_query_ms": await e2e_times(base_url, texts, repeat=True),
                "e2e_lexical_ms": await e2e_times(base_url, texts, mode="lexical"),
                "e2e_semantic_ms": await e2e_times(base_url, texts, mode="semantic"),
                "stats_call_ms": await call_overhead(base_url),
                "e2e_context_query_ms": await context_times(base_url, texts[:CONTEXT_CALLS],
                                                            with_query=True),
                "e2e_context_recent_ms": await context_times(base_url, texts[:CONTEXT_CALLS],
                                                             with_query=False),
            }
            print(f"{size:>7}: {json.dumps(report['sizes'][size])}", flush=True)
    base = report["sizes"][sizes[0]]["sql_ms"]
    top = report["sizes"][sizes[-1]]["sql_ms"]
    report["sql_growth"] = {leg: round(top[leg] / base[leg], 2) if base[leg] else None
                            for leg in base}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed-threads", type=int, default=None,
                        help="MEMHUB_EMBED_THREADS for the server (default: the server's own, "
                             "half the cores)")
    parser.add_argument("--query-quantize", choices=("int8-block", "int8-token", "int8", "none"),
                        default="int8-block",
                        help="MEMHUB_QUERY_QUANTIZE for the server (default: int8-block, the "
                             "server's default)")
    parser.add_argument("--query-threads", type=int, default=None,
                        help="MEMHUB_QUERY_THREADS for the server (default: the server's own, "
                             "every core up to 4)")
    parser.add_argument("--out", default=None,
                        help="report file (default: bench/results/search-DATE-COMMIT.json)")
    args = parser.parse_args()
    report = asyncio.run(bench(args))
    out = write_result(args.out or default_out("search"), report)
    print(json.dumps(report, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
