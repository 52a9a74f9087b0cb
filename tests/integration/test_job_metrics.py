"""The background jobs report each run, failed or not, to the app's metrics (memhub/metrics.py):
on a real database, and on one that is not there."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from memhub.storage import expiry
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.retrieval import lexicon
from tests.conftest import make_settings
from tests.support.server import free_port

Loop = Callable[[Callable[[bool], None]], Coroutine[Any, Any, None]]


async def first_runs(loop: Loop, count: int = 1, timeout: float = 30.0) -> list[bool]:
    """Run a job loop until it has reported `count` runs; what it reported."""
    runs: list[bool] = []
    task = asyncio.create_task(loop(runs.append))
    try:
        async with asyncio.timeout(timeout):
            while len(runs) < count:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return runs


@pytest.fixture
async def live_backend(db_dsn, tmp_path):
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    yield backend
    await backend.close()


@pytest.fixture
async def dead_backend(tmp_path):
    """A backend whose database is not there: every transaction fails (UNAVAILABLE)."""
    dsn = f"postgresql://memhub@127.0.0.1:{free_port()}/memhub?connect_timeout=1"
    backend = PostgresBackend(make_settings(dsn, tmp_path, db_connect_timeout=0.2), dsn)
    await backend.open()
    yield backend
    await backend.close()


async def test_the_expiry_sweep_reports_a_run(live_backend):
    assert await first_runs(lambda record: expiry.sweep_forever(live_backend, 3600, record)) \
        == [True]


async def test_the_expiry_sweep_reports_a_failed_run(dead_backend):
    assert await first_runs(lambda record: expiry.sweep_forever(dead_backend, 0.01, record),
                            count=2) == [False, False]


async def test_the_lexicon_recount_reports_runs_and_failures(live_backend, dead_backend):
    assert await first_runs(lambda record: lexicon.refresh_forever(live_backend, 3600, record)) \
        == [True]
    assert await first_runs(lambda record: lexicon.refresh_forever(dead_backend, 3600, record)) \
        == [False]
