"""Retrieval test support: one loaded embedding model per session, a backend on a test's own
database, and a bounded drain of the embedding queue (the worker's own code, no sleeps)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from contextlib import asynccontextmanager

import psycopg
import pytest

from memhub.config import Settings
from memhub.embedding.embedder import Embedder
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.retrieval.embedding_queue import process_batch, queue_counts
from memhub.storage.principal import Principal

WRITER = Principal(token_id=0, surface="cursor", namespaces=None)


@pytest.fixture(scope="session")
def embedder(tmp_path_factory) -> Embedder:
    """The real model, loaded once (tests skip semantic checks only if CI has no model)."""
    from tests.conftest import MODEL_PATH

    settings = Settings(embed_model_path=MODEL_PATH, data_dir=tmp_path_factory.mktemp("emb"))
    model = Embedder(settings)
    model.start()
    assert model.wait(120), "model load did not finish in 120 s"
    if not model.ready:
        # CI always has the model (.ci/run points MEMHUB_EMBED_MODEL_PATH at it): there a
        # missing model is a broken setup, never a reason to skip the semantic tests.
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide the embedding model: {model.status()}")
        pytest.skip(f"embedding model not available: {model.status()}")
    return model


@asynccontextmanager
async def open_backend(settings: Settings, embedder: Embedder | None):
    backend = PostgresBackend(settings, settings.database_url.get_secret_value(),
                              embedder=embedder)
    await backend.open()
    try:
        yield backend
    finally:
        await backend.close()


async def drain(backend, embedder, *, timeout: float = 60.0, batch: int = 64) -> None:
    """Run the worker's batch step until no job is due (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = await process_batch(backend, embedder, batch=batch, max_attempts=5)
        if counts["claimed"] == 0 and (await queue_counts(backend))["due"] == 0:
            return
    raise TimeoutError("embedding queue did not drain")


def owner_execute(dsn: str, sql: str, params=None):
    """Arrange state as the owner (bypassing the service), e.g. an expiry in the past."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else None


def bulk_insert_memories(conn: psycopg.Connection, namespace: str, count: int,
                         tags: Callable[[int], list[str]] | None = None,
                         first: int = 1,
                         keys: Callable[[int], str | None] | None = None) -> None:
    """`count` ACTIVE memories straight into the table as the owner, each with its revision
    (one transaction: each memory must mirror its revision by COMMIT). For tests about plans
    at a size that writing through the API would make slow. `tags(i)`: the tags of the i-th
    (1-based; none by default); `keys(i)` its key (none by default). `first`: the number of
    the first (its text holds it; a namespace grown by a second call starts where the first
    stopped)."""
    tag_lists = [tags(i) if tags else [] for i in range(first, first + count)]
    key_list = [keys(i) if keys else None for i in range(first, first + count)]
    with conn.transaction():
        conn.execute(
            "INSERT INTO memories (namespace, kind, title, content, tags, content_hash,"
            " author_client, key) SELECT %(ns)s, (ARRAY['DECISION','FACT','NOTE'])[1 + i %% 3],"
            " 'note ' || i, 'ledger entry ' || i,"
            " ARRAY(SELECT jsonb_array_elements_text(%(tags)s::jsonb -> (i - %(first)s)::int)),"
            " decode(md5(%(ns)s || i), 'hex'),"
            " 'test', %(keys)s::jsonb ->> (i - %(first)s)::int"
            " FROM generate_series(%(first)s, %(first)s + %(n)s - 1) AS i",
            {"ns": namespace, "n": count, "first": first, "tags": json.dumps(tag_lists),
             "keys": json.dumps(key_list)})
        conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories m WHERE namespace = %s AND NOT EXISTS"
            " (SELECT 1 FROM memory_revisions r WHERE r.memory_id = m.id)", [namespace])
