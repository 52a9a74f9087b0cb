"""Tenants' memories for bench/tenants.py: bench/project_corpus.py's notes, their vectors
embedded once by the server's own memory model and kept in a file, and a bulk load that writes
memories, revisions and vectors by COPY.

Why precomputed: 100,000 notes take the server's worker ~15 minutes to embed on two cores, and
several patterns need a neighbour of that size. The vectors are the ones the worker would
write (the same fp32 model, the same text: `document_text(title, content)`), computed once per
(corpus, model) and cached under /tmp; a bulk-loaded memory is exactly what a drained queue
leaves. What the worker's own speed is on such a load is measured apart (the import pattern).
"""

from __future__ import annotations

import hashlib
import random
import time
from pathlib import Path

import numpy as np
import psycopg

from bench import project_corpus

CACHE = Path("/tmp/memhub-bench-vectors")


def notes(count: int, seed: int) -> list[dict]:
    """`count` distinct notes of the project corpus for `seed`."""
    return list(project_corpus.notes(0, count, random.Random(seed), set()))


def texts(items: list[dict]) -> list[str]:
    from memhub.embedding.embedder import document_text

    return [document_text(item["title"], item["content"]) for item in items]


def vectors(items: list[dict], model_path: str, threads: int = 2) -> np.ndarray:
    """The memory model's vectors of `items` (float32, n x 384), from the cache when there."""
    from memhub.config import Settings
    from memhub.embedding.loading import load_model

    docs = texts(items)
    digest = hashlib.sha256("\n".join(docs).encode() + model_path.encode()).hexdigest()[:16]
    path = CACHE / f"{len(docs)}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    settings = Settings(embed_model_path=model_path, embed_threads=threads)
    model = load_model(settings)
    started = time.monotonic()
    out = np.empty((len(docs), settings.embed_dim), dtype=np.float32)
    order = sorted(range(len(docs)), key=lambda i: len(docs[i]))
    step = 2048
    for at in range(0, len(order), step):
        chunk = order[at:at + step]
        for i, vector in zip(chunk, model.embed([docs[i] for i in chunk], batch_size=16),
                             strict=True):
            out[i] = vector
        print(f"\r  embedded {min(at + step, len(order))}/{len(order)} "
              f"({time.monotonic() - started:.0f} s)", end="", flush=True)
    print()
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, out)
    tmp.rename(path)
    return out


def bulk_load(dsn: str, namespace: str, items: list[dict], vecs: np.ndarray | None,
              model: str, *, analyze: bool = True) -> None:
    """`items` into `namespace` by COPY with revision 1; with `vecs`, their vectors as the
    worker writes them (no job queued); without, an embedding job each (the worker's work)."""
    from memhub.storage.memory_input import content_hash
    from memhub.storage.sanitize import sanitize_text

    with psycopg.connect(dsn) as conn:
        with conn.cursor().copy(
            "COPY memories (namespace, kind, title, content, tags, content_hash, author_client)"
            " FROM STDIN"
        ) as copy:
            for item in items:
                content = sanitize_text(item["content"])
                copy.write_row((namespace, item["kind"], item["title"], content, item["tags"],
                                content_hash(content), "bench"))
        conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories m WHERE namespace = %s AND NOT EXISTS"
            " (SELECT 1 FROM memory_revisions r WHERE r.memory_id = m.id)", [namespace])
        if vecs is None:
            conn.execute(
                "INSERT INTO embedding_jobs (namespace, memory_id, revision)"
                " SELECT namespace, id, 1 FROM memories m WHERE namespace = %s"
                " AND NOT EXISTS (SELECT 1 FROM embedding_jobs j WHERE j.memory_id = m.id)",
                [namespace])
        else:
            by_content = {sanitize_text(item["content"]): i for i, item in enumerate(items)}
            rows = conn.execute("SELECT id, content FROM memories WHERE namespace = %s",
                                [namespace]).fetchall()
            with conn.cursor().copy(
                "COPY memory_embeddings (memory_id, namespace, revision, model, embedding)"
                " FROM STDIN"
            ) as copy:
                for memory_id, content in rows:
                    vector = vecs[by_content[content]]
                    copy.write_row((memory_id, namespace, 1, model,
                                    "[" + ",".join(f"{x:.7g}" for x in vector) + "]"))
        if analyze:
            conn.execute("ANALYZE memories")
            conn.execute("ANALYZE memory_embeddings")
