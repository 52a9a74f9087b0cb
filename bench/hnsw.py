#!/usr/bin/env python3
"""HNSW settings for a large tenant: the graph's degree (`m`), its build (`ef_construction`),
and whether a graph worn by churn needs a rebuild.

    .venv/bin/python -m bench.hnsw [--rows 50000] [--queries 200] [--noise 0.08] [--out PATH]

A scratch embedded PostgreSQL with pgvector (nothing of memhub's schema: the index is what is
measured). The vectors are clustered like a project's embeddings (unit vectors around 400
topic centres, 384 dimensions; uniformly random vectors are a worst case no real corpus is).
For each `m`, the index is built (time, size), then every query's top 10 is read through the
index at `hnsw.ef_search` 40 and 100 and compared with the exact top 10 (recall@10, p50).
Then churn, as a long-lived tenant sees it: half the rows deleted and as many new ones
inserted, VACUUM; recall measured on the worn graph, then after `REINDEX INDEX CONCURRENTLY`
(time; writes are not blocked while it runs).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench.common import default_out, machine, provenance, write_result
from memhub.storage.postgres.embedded import EmbeddedPostgres

DIM = 384
TOPICS = 400
K = 10
MS = (8, 16, 32)
EF_SEARCHES = (40, 100)


def clustered(rng: np.random.Generator, n: int, centres: np.ndarray,
              noise: float) -> np.ndarray:
    picks = centres[rng.integers(0, len(centres), n)]
    # noise 0.08: a member's cosine to its centre ~0.54, to another member ~0.3, as a
    # project's related notes are with this model; tighter clusters make every graph exact.
    vectors = picks + rng.normal(0, noise, (n, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def insert(conn: psycopg.Connection, first_id: int, vectors: np.ndarray) -> None:
    with conn.cursor().copy("COPY items (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["bigint", "vector"])
        for i, vector in enumerate(vectors):
            copy.write_row([first_id + i, vector])


def recall_at(conn: psycopg.Connection, queries: np.ndarray, ef: int) -> dict[str, float]:
    conn.execute(f"SET hnsw.ef_search = {int(ef)}")
    hits, times = [], []
    for query in queries:
        conn.execute("SET enable_indexscan = off")
        exact = {r[0] for r in conn.execute(
            "SELECT id FROM items ORDER BY embedding <=> %s LIMIT %s", [query, K])}
        conn.execute("SET enable_indexscan = on")
        conn.execute("SET enable_seqscan = off")  # the graph, whatever the planner prefers
        started = time.perf_counter()
        found = {r[0] for r in conn.execute(
            "SELECT id FROM items ORDER BY embedding <=> %s LIMIT %s", [query, K])}
        times.append((time.perf_counter() - started) * 1000)
        conn.execute("SET enable_seqscan = on")
        hits.append(len(exact & found) / K)
    return {"recall_at_10": round(statistics.mean(hits), 4),
            "p50_ms": round(statistics.median(times), 2)}


def run(rows: int, n_queries: int, noise: float) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    centres = rng.normal(0, 1, (TOPICS, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    base = clustered(rng, rows, centres, noise)
    fresh = clustered(rng, rows // 2, centres, noise)
    queries = clustered(rng, n_queries, centres, noise)
    workdir = Path(tempfile.mkdtemp(prefix="memhub-hnsw-"))
    cluster = EmbeddedPostgres(workdir)
    out: list[dict[str, Any]] = []
    try:
        dsn = cluster.start()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute("SET maintenance_work_mem = '512MB'")
            for m in MS:
                conn.execute("DROP TABLE IF EXISTS items")
                conn.execute(f"CREATE TABLE items (id bigint PRIMARY KEY, embedding vector({DIM}))")
                insert(conn, 0, base)
                conn.execute("VACUUM ANALYZE items")
                started = time.perf_counter()
                conn.execute(f"CREATE INDEX items_hnsw ON items USING hnsw "
                             f"(embedding vector_cosine_ops) WITH (m = {m}, "
                             f"ef_construction = 64)")
                build = time.perf_counter() - started
                size = conn.execute("SELECT pg_relation_size('items_hnsw')").fetchone()[0]
                row: dict[str, Any] = {"m": m, "rows": rows, "build_s": round(build, 1),
                                       "index_mib": round(size / 2**20, 1)}
                for ef in EF_SEARCHES:
                    row[f"fresh_ef{ef}"] = recall_at(conn, queries, ef)
                conn.execute("DELETE FROM items WHERE id % 2 = 0")
                insert(conn, rows, fresh)
                conn.execute("VACUUM ANALYZE items")
                for ef in EF_SEARCHES:
                    row[f"churned_ef{ef}"] = recall_at(conn, queries, ef)
                started = time.perf_counter()
                conn.execute("REINDEX INDEX CONCURRENTLY items_hnsw")
                row["reindex_concurrently_s"] = round(time.perf_counter() - started, 1)
                for ef in EF_SEARCHES:
                    row[f"rebuilt_ef{ef}"] = recall_at(conn, queries, ef)
                print(row, flush=True)
                out.append(row)
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--noise", type=float, default=0.08)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = run(args.rows, args.queries, args.noise)
    report = {"provenance": provenance(), "machine": machine(),
              "settings": {"rows": args.rows, "queries": args.queries, "noise": args.noise},
              "rows": rows}
    print("wrote", write_result(args.out or default_out("hnsw"), report))


if __name__ == "__main__":
    main()
