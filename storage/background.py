"""Periodic background tasks started from app.STARTUP and cancelled at shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any


def run_until_shutdown(stack: AsyncExitStack, coro: Coroutine[Any, Any, None], name: str) -> None:
    """Run `coro` as a task for the app's lifetime; the lifespan's exit cancels and awaits it."""
    task = asyncio.create_task(coro, name=name)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)
