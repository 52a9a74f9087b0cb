"""The hybrid search's lexical leg, run in a transaction of its own beside the caller's.

A hybrid search starts the lexical leg on a second pooled connection while the query is being
embedded, then awaits its ids inside the main transaction (storage/postgres/retrieval/search.py).
These helpers hold the rules that keep two transactions of one search from deadlocking the pool or
leaking an unretrieved error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


class LexicalLeg(asyncio.Future):
    """The lexical leg's ids, resolved as soon as they are read, before the leg's read-only
    transaction commits. Its outcome is the transaction's when that ends first (an error, a
    cancellation); cancelling it cancels the transaction."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = asyncio.Event()  # set once the leg holds its pooled connection
        self.task: asyncio.Task | None = None

    def run(self, transaction: Awaitable[list[Any]]) -> None:
        self.task = asyncio.ensure_future(transaction)
        self.task.add_done_callback(self._settle)
        self.add_done_callback(lambda f: f.cancelled() and self.task is not None
                               and self.task.cancel())

    def _settle(self, task: asyncio.Task) -> None:
        if task.cancelled():
            if not self.done():
                self.cancel()
            return
        error = task.exception()  # retrieved either way: a failed COMMIT after the ids is moot
        if not self.done():
            if error is not None:
                self.set_exception(error)
            else:
                self.set_result(task.result())


async def holding(lexical: LexicalLeg | None) -> None:
    """Wait until the lexical leg holds its own pooled connection (or has finished). The
    caller's transaction will wait for the leg while holding a connection, so the leg must hold
    one first: with the pool exhausted, searches each holding one connection and queued for a
    second would wait on each other until the pool's timeout."""
    if lexical is None:
        return
    held = asyncio.ensure_future(lexical.holding.wait())
    try:
        await asyncio.wait({lexical, held}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        held.cancel()


def abandon(task: asyncio.Future | None) -> None:
    """Stop waiting for a leg whose search failed or finished: cancel it if it is still
    running, and retrieve its outcome so an error nobody awaited is not logged as "never
    retrieved"."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    task.add_done_callback(lambda f: f.cancelled() or f.exception())
