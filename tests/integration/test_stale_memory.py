"""Stage 0: a retired memory (superseded, deleted, expired) is never returned, whatever the
query, limit or mode, even when its text matches the query best and its vector still exists.

Mutation check (docs/failure-modes.md): drop `status = 'ACTIVE'` from `live_memories` and these
tests fail."""

from __future__ import annotations

import pytest

from memhub.storage.principal import Principal
from tests.conftest import make_settings
from tests.support.retrieval import WRITER, drain, embedder, open_backend, owner_execute

__all__ = ["embedder"]

NS = "stale"
MODES = ("hybrid", "lexical", "semantic")
OLD_REDIS = ("The job queue runs on Redis: Redis lists hold the jobs and a Redis worker pool "
             "pops them. Redis is the queue.")
NEW_QUEUE = ("The job queue runs on PostgreSQL with FOR UPDATE SKIP LOCKED; Redis was removed "
             "from the stack.")
DELETED = "Redis queue credentials rotate monthly; the Redis queue password lives in Vault."
EXPIRED = "Temporary: the Redis queue is paused during the Redis 7 upgrade window."


@pytest.fixture(scope="module")
async def world(module_dsn, embedder, tmp_path_factory):
    """One replacement, three retired memories that match 'redis queue' best, and 120 live
    fillers so every limit up to 100 is filled. Built once: the tests only read it."""
    settings = make_settings(module_dsn, tmp_path_factory.mktemp("stale"))
    db_dsn = module_dsn
    async with open_backend(settings, embedder) as backend:
        old = await backend.remember(WRITER, NS, content=OLD_REDIS, kind="DECISION",
                                     title="Queue on Redis", tags=["queue"])
        deleted = await backend.remember(WRITER, NS, content=DELETED, kind="FACT",
                                         title="Redis queue credentials", tags=["queue"])
        expired = await backend.remember(WRITER, NS, content=EXPIRED, kind="NOTE",
                                          title="Redis queue pause", tags=["queue"])
        for i in range(120):
            await backend.remember(
                WRITER, NS, kind="FACT", tags=["queue"] if i % 2 else ["cache"],
                content=f"Service {i} keeps a small queue of work items and a cache entry "
                        f"#{i} in its own process memory.",
            )
        # Embedded while live, as in real life: the retired ones keep their vectors.
        await drain(backend, embedder)
        new = await backend.remember(WRITER, NS, content=NEW_QUEUE, kind="DECISION",
                                     title="Queue on PostgreSQL", tags=["queue"],
                                     supersedes=[old["memory"]["id"]])
        await backend.forget(WRITER, NS, deleted["memory"]["id"], "queue moved off Redis")
        await drain(backend, embedder)
        # Expired by the clock, not yet swept: still status ACTIVE in the table.
        owner_execute(db_dsn, "UPDATE memories SET expires_at = now() - interval '1 second' "
                              "WHERE id = %s", [expired["memory"]["id"]])
        retired = {old["memory"]["id"], deleted["memory"]["id"], expired["memory"]["id"]}
        yield backend, new["memory"]["id"], retired


async def test_retired_memories_keep_their_vectors_so_only_stage_0_excludes_them(world,
                                                                              module_dsn):
    _, _, retired = world
    rows = owner_execute(module_dsn, "SELECT memory_id::text FROM memory_embeddings "
                                 "WHERE memory_id = ANY(%s::uuid[])", [list(retired)])
    assert {r[0] for r in rows} == retired


@pytest.mark.parametrize("mode", MODES)
async def test_no_retired_memory_is_returned_at_any_limit_from_1_to_100(world, mode):
    backend, _, retired = world
    for limit in range(1, 101):
        result = await backend.search(WRITER, NS, "redis queue", limit=limit, mode=mode)
        ids = {r["memory"]["id"] for r in result["results"]}
        assert not ids & retired, f"limit={limit} mode={mode} returned a retired memory"
        assert all(r["memory"]["status"] == "ACTIVE" for r in result["results"])
        assert len(result["results"]) <= limit


@pytest.mark.parametrize("mode", MODES)
async def test_the_retired_texts_verbatim_as_queries_never_return_them(world, mode):
    backend, _, retired = world
    for text in (OLD_REDIS, DELETED, EXPIRED):
        result = await backend.search(WRITER, NS, text, limit=100, mode=mode)
        assert not {r["memory"]["id"] for r in result["results"]} & retired


@pytest.mark.parametrize("mode", ("hybrid", "lexical"))
async def test_searching_redis_returns_the_replacement_first(world, mode):
    backend, new_id, _ = world
    result = await backend.search(WRITER, NS, "redis", limit=5, mode=mode)
    assert result["results"][0]["memory"]["id"] == new_id


async def test_kind_and_tag_filters_apply_inside_stage_0(world):
    backend, new_id, retired = world
    for mode in MODES:
        result = await backend.search(WRITER, NS, "redis queue", limit=100, mode=mode,
                                      kinds=["DECISION"], tags=["queue"])
        ids = [r["memory"]["id"] for r in result["results"]]
        assert ids == [new_id]


@pytest.mark.parametrize("budget", [1, 40, 200, 2000, 32000])
async def test_memory_context_never_packs_a_retired_memory(world, budget):
    backend, _, retired = world
    for query in (None, "redis queue", OLD_REDIS):
        packed = await backend.context(WRITER, NS, query, budget_tokens=budget)
        assert not {m["id"] for m in packed["memories"]} & retired
        assert packed["tokens_used"] <= budget


async def test_a_quarantined_memory_is_stored_but_never_served(world, module_dsn):
    backend, new_id, _ = world
    flag = "UPDATE memories SET quarantined = %s WHERE id = %s"
    owner_execute(module_dsn, flag, [True, new_id])
    try:
        for mode in MODES:
            result = await backend.search(WRITER, NS, "redis queue postgresql", limit=100,
                                          mode=mode)
            assert new_id not in {r["memory"]["id"] for r in result["results"]}
        for query in (None, "redis queue"):
            packed = await backend.context(WRITER, NS, query, budget_tokens=32000)
            assert new_id not in {m["id"] for m in packed["memories"]}
    finally:
        owner_execute(module_dsn, flag, [False, new_id])


async def test_another_namespace_never_sees_these_memories(world):
    backend, _, _ = world
    other = Principal(token_id=0, surface="cursor", namespaces=None)
    for mode in MODES:
        result = await backend.search(other, "elsewhere", "redis queue", limit=100, mode=mode)
        assert result["results"] == []
