"""The embedding queue: jobs become vectors of the current revision, retired memories are
skipped, failures back off and dead-letter, concurrent workers never share a job, a model change
re-embeds, and the backfill command embeds whatever is missing."""

from __future__ import annotations

import asyncio

import pytest

from memhub.storage.postgres.retrieval.embedding_queue import (
    enqueue_missing,
    process_batch,
    queue_counts,
)
from tests.support.retrieval import WRITER, drain, embedder, open_backend, owner_execute

__all__ = ["embedder"]

NS = "worker"


class BrokenEmbedder:
    """A model that fails on texts containing 'poison' (the queue's retry path is real)."""

    def __init__(self, real):
        self.real = real
        self.model_name = real.model_name
        self.ready = True
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        if any("poison" in t for t in texts):
            raise ValueError("cannot embed poison")
        return self.real.embed_documents(texts)


def vectors(dsn):
    return {r[0]: (r[1], r[2]) for r in owner_execute(
        dsn, "SELECT memory_id::text, revision, model FROM memory_embeddings")}


def jobs(dsn):
    return owner_execute(dsn, "SELECT memory_id::text, status, attempts, run_after > now(), "
                              "last_error FROM embedding_jobs ORDER BY id")


async def test_a_write_queues_a_job_that_becomes_a_vector_of_its_revision(settings, db_dsn,
                                                                            embedder):
    async with open_backend(settings, embedder) as backend:
        created = await backend.remember(WRITER, NS, content="Ledger amounts are integers.")
        memory_id = created["memory"]["id"]
        assert [j[0] for j in jobs(db_dsn)] == [memory_id]
        await drain(backend, embedder)
        assert vectors(db_dsn) == {memory_id: (1, embedder.model_name)}
        assert jobs(db_dsn) == []


async def test_a_revision_is_re_embedded_and_the_stale_job_is_skipped(settings, db_dsn,
                                                                        embedder):
    async with open_backend(settings, embedder) as backend:
        created = await backend.remember(WRITER, NS, content="Payouts run daily at 06:00 UTC.")
        memory_id = created["memory"]["id"]
        await backend.revise(WRITER, NS, memory_id, 1,
                             content="Payouts run twice daily, 06:00 and 18:00 UTC.")
        counts = await process_batch(backend, embedder, batch=10, max_attempts=5)
        assert counts["skipped"] == 1 and counts["embedded"] == 1
        assert vectors(db_dsn) == {memory_id: (2, embedder.model_name)}


async def test_a_job_for_a_retired_memory_is_dropped_without_a_model_call(settings, db_dsn,
                                                                           embedder):
    async with open_backend(settings, embedder) as backend:
        created = await backend.remember(WRITER, NS, content="Staging uses synthetic orgs.")
        await backend.forget(WRITER, NS, created["memory"]["id"], "wrong")
        broken = BrokenEmbedder(embedder)
        counts = await process_batch(backend, broken, batch=10, max_attempts=5)
        assert counts["newest_wait"] >= 0
        assert {k: counts[k] for k in ("claimed", "embedded", "skipped", "failed", "dead")} \
            == {"claimed": 1, "embedded": 0, "skipped": 1, "failed": 0, "dead": 0}
        assert broken.calls == 0 and vectors(db_dsn) == {} and jobs(db_dsn) == []


async def test_a_failing_job_backs_off_then_is_dead_lettered_and_shows_in_stats(settings, db_dsn,
                                                                                 embedder):
    async with open_backend(settings, embedder) as backend:
        await backend.remember(WRITER, NS, content="This text is poison for the model.")
        good = await backend.remember(WRITER, NS, content="Refunds are issued within 5 days.")
        broken = BrokenEmbedder(embedder)
        counts = await process_batch(backend, broken, batch=10, max_attempts=3)
        # The poisonous text fails alone; its batch-mate is embedded.
        assert counts["embedded"] == 1 and counts["failed"] == 1
        assert set(vectors(db_dsn)) == {good["memory"]["id"]}
        [(_, status, attempts, later, error)] = jobs(db_dsn)
        assert (status, attempts, later) == ("pending", 1, True) and "poison" in error
        # Not due yet: a second pass claims nothing.
        assert (await process_batch(backend, broken, batch=10, max_attempts=3))["claimed"] == 0
        for expected in ("pending", "dead"):
            owner_execute(db_dsn, "UPDATE embedding_jobs SET run_after = now()")
            await process_batch(backend, broken, batch=10, max_attempts=3)
            assert jobs(db_dsn)[0][1] == expected
        assert jobs(db_dsn)[0][2] == 3
        stats = await backend.stats(WRITER)
        assert stats["embedding_queue"] == {"pending": 0, "dead": 1}


async def test_concurrent_workers_never_embed_the_same_job_twice(settings, db_dsn, embedder):
    async with open_backend(settings, embedder) as backend:
        for i in range(40):
            await backend.remember(WRITER, NS, content=f"Fact number {i} about settlement.")
        results = await asyncio.gather(*[
            process_batch(backend, embedder, batch=8, max_attempts=5) for _ in range(6)])
        while (await queue_counts(backend))["pending"]:
            results.append(await process_batch(backend, embedder, batch=8, max_attempts=5))
        assert sum(r["embedded"] for r in results) == 40
        assert sum(r["claimed"] for r in results) == 40
        assert len(vectors(db_dsn)) == 40


async def test_a_changed_model_re_embeds_at_start_up(settings, db_dsn, embedder):
    async with open_backend(settings, embedder) as backend:
        created = await backend.remember(WRITER, NS, content="Invoices are numbered per org.")
        await drain(backend, embedder)
        owner_execute(db_dsn, "UPDATE memory_embeddings SET model = 'an-older-model'")
        assert await enqueue_missing(backend, embedder.model_name) == 1
        assert await enqueue_missing(backend, embedder.model_name) == 0  # no duplicate jobs
        await drain(backend, embedder)
        assert vectors(db_dsn) == {created["memory"]["id"]: (1, embedder.model_name)}


async def test_backfill_embeds_whatever_is_missing(settings, db_dsn, embedder):
    from memhub.admin.backfill import backfill

    async with open_backend(settings, embedder) as backend:
        for i in range(5):
            await backend.remember(WRITER, NS, content=f"Backfill candidate {i}.")
        owner_execute(db_dsn, "DELETE FROM embedding_jobs")  # e.g. restored from a dump
        report = await backfill(backend, embedder, batch=2, progress=False)
        assert report["queued"] == 5 and report["embedded"] == 5
        assert len(vectors(db_dsn)) == 5 and jobs(db_dsn) == []


async def test_a_memory_is_lexically_searchable_at_commit_before_its_vector(settings,
                                                                             embedder):
    async with open_backend(settings, embedder) as backend:
        created = await backend.remember(WRITER, NS, content="Chargebacks debit the balance.")
        hybrid = await backend.search(WRITER, NS, "chargebacks balance")
        assert [r["memory"]["id"] for r in hybrid["results"]] == [created["memory"]["id"]]
        assert hybrid["results"][0]["why"]["semantic_rank"] is None
        semantic = await backend.search(WRITER, NS, "chargebacks balance", mode="semantic")
        assert semantic["results"] == []


@pytest.mark.parametrize("max_attempts", [1])
async def test_one_attempt_dead_letters_at_once(settings, db_dsn, embedder, max_attempts):
    async with open_backend(settings, embedder) as backend:
        await backend.remember(WRITER, NS, content="poison pill")
        counts = await process_batch(backend, BrokenEmbedder(embedder), batch=5,
                                     max_attempts=max_attempts)
        assert counts["dead"] == 1 and jobs(db_dsn)[0][1] == "dead"
