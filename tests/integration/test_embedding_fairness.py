"""The embedding queue is served in turns across namespaces (migration 0043): a backlog in one
namespace never holds another namespace's write behind it, a batch gives a namespace with a
backlog at most its share, and turns resume after the namespace served last. Counted in
batches, never timed."""

from __future__ import annotations

import psycopg

from memhub.storage.postgres.retrieval.embedding_queue import process_batch
from tests.support.retrieval import (
    WRITER,
    bulk_insert_memories,
    embedder,
    open_backend,
    owner_execute,
)

__all__ = ["embedder"]


def queue_backlog(dsn: str, namespace: str, count: int) -> None:
    """`count` memories of `namespace` with their embedding jobs, as an import leaves them."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        bulk_insert_memories(conn, namespace, count)
        conn.execute("INSERT INTO embedding_jobs (namespace, memory_id, revision)"
                     " SELECT namespace, id, 1 FROM memories WHERE namespace = %s", [namespace])


def embedded_namespaces(dsn: str) -> dict[str, int]:
    return dict(owner_execute(dsn, "SELECT namespace, count(*)::int FROM memory_embeddings"
                                   " GROUP BY namespace"))


async def test_a_write_during_another_namespaces_import_is_embedded_in_the_next_batch(
        settings, db_dsn, embedder):
    queue_backlog(db_dsn, "import", 40)
    async with open_backend(settings, embedder) as backend:
        quiet = await backend.remember(WRITER, "quiet", content="The quiet tenant's rota.")
        counts = await process_batch(backend, embedder, batch=4, max_attempts=5)
    assert counts["embedded"] == 4
    # First come, first served would have taken four of the import's forty older jobs.
    assert embedded_namespaces(db_dsn) == {"import": 3, "quiet": 1}
    assert owner_execute(db_dsn, "SELECT count(*) FROM memory_embeddings WHERE memory_id = %s",
                         [quiet["memory"]["id"]]) == [(1,)]


async def test_a_batch_takes_every_namespaces_oldest_job_before_anyones_second(
        settings, db_dsn, embedder):
    for namespace, count in (("a", 6), ("b", 1), ("c", 2)):
        queue_backlog(db_dsn, namespace, count)
    async with open_backend(settings, embedder) as backend:
        await process_batch(backend, embedder, batch=5, max_attempts=5)
    # Turn one: a, b, c; turn two: a, c.
    assert embedded_namespaces(db_dsn) == {"a": 2, "b": 1, "c": 2}


async def test_turns_resume_after_the_namespace_served_last(settings, db_dsn, embedder):
    for namespace in ("a", "b", "c"):
        queue_backlog(db_dsn, namespace, 4)
    served = []
    after = ""
    async with open_backend(settings, embedder) as backend:
        for _ in range(3):
            before = embedded_namespaces(db_dsn)
            counts = await process_batch(backend, embedder, batch=2, max_attempts=5,
                                         after=after)
            now = embedded_namespaces(db_dsn)
            served.append(sorted(ns for ns in now if now[ns] != before.get(ns, 0)))
            after = counts["served"]
    # Without the resume, every batch would serve a and b and c would wait for them.
    assert served == [["a", "b"], ["a", "c"], ["b", "c"]]
