"""The intent gate's per-process cache without a database (no listener): how much it keeps,
and that a load overtaken by an invalidation is thrown away."""

from __future__ import annotations

import asyncio

from memhub.storage.postgres.work.gate_cache import GateCache, GateEntry


def entry() -> GateEntry:
    return GateEntry(gate_on=False, profile_version=0, skills=())


async def loaded() -> GateEntry:
    return entry()


async def test_the_cache_keeps_at_most_its_entries_and_drops_the_least_recently_used():
    cache = GateCache(3600.0, None, entries_max=3)
    for namespace in ("a", "b", "c"):
        await cache.get(namespace, loaded)
    await cache.get("a", loaded)  # used again: "b" is now the least recently used
    await cache.get("d", loaded)
    assert [n for n in "abcd" if cache.peek(n) is not None] == ["a", "c", "d"]


async def test_notifications_about_namespaces_it_does_not_hold_leave_nothing_behind():
    cache = GateCache(3600.0, None)
    await cache.get("acme", loaded)
    for i in range(10_000):
        cache.invalidate(f"ns-{i}")
    assert cache.invalidations == 0
    assert list(cache._entries) == ["acme"] and cache._loading == {}


class Load:
    """A load that has begun once `started` is set and ends when `release` is."""

    def __init__(self) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self) -> GateEntry:
        self.started.set()
        await self.release.wait()
        return entry()


async def begin(cache: GateCache, load: Load) -> asyncio.Task:
    task = asyncio.create_task(cache.get("acme", load))
    await load.started.wait()
    return task


async def test_a_load_that_began_before_an_invalidation_is_not_kept():
    cache = GateCache(3600.0, None)
    overtaken = Load()
    first = await begin(cache, overtaken)
    cache.invalidate("acme")
    later = Load()
    second = await begin(cache, later)  # began after the invalidation: kept
    overtaken.release.set()
    await first
    assert cache.peek("acme") is None
    later.release.set()
    await second
    assert cache.peek("acme") is not None

    cache.invalidate("acme")
    alone = Load()
    third = await begin(cache, alone)
    cache.invalidate("acme")
    alone.release.set()
    await third
    assert cache.peek("acme") is None and cache._loading == {}
