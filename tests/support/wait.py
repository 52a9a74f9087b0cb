"""The one way a test waits: on a condition, with a bound, never a bare sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
POLL = 0.05


async def until(check: Callable[[], Awaitable[T]], *, timeout: float = 15.0,
                what: str = "the condition") -> T:
    """The first truthy value `check()` returns; TimeoutError naming `what` once `timeout`
    seconds have passed without one."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not reached in {timeout} s")
        await asyncio.sleep(POLL)


def until_sync(check: Callable[[], T], *, timeout: float = 15.0,
               what: str = "the condition") -> T:
    """`until` for code with no event loop (a blocking driver, a subprocess)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not reached in {timeout} s")
        time.sleep(POLL)
