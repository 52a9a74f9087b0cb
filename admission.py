"""Per-token admission in this process: requests in flight, and an optional token bucket.

`enter` admits a request when its token has fewer than its limit in flight; otherwise the
request queues (first come, first served) for at most `wait` seconds, and a slot freed by
`leave` is handed straight to the first in the queue, so a request that arrives later cannot
take it. At most MAX_WAITING requests of one token queue; past that, or once the wait is over,
the request is refused. `take` spends one request of a token's bucket (`burst` deep, refilled
at `per_minute` / 60 a second), or says how long until one is back.

The memory is bounded: a token holds an entry of `_slots` only while it has a request in
flight or queued, and at most MAX_BUCKETS buckets are kept, the least recently used dropped
first (a dropped bucket starts full again, as a token unseen for long would have refilled).
The gateway applies it (gateway/token_limits.py); `stats` and the dashboard read `usage`.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field

MAX_WAITING = 32
MAX_BUCKETS = 10_000

# How the call in progress gives up its place in the fair-share gate (gateway/fair_share.py
# sets it for the call's context) while it waits on a service outside this process.
StepAside = Callable[[], AbstractAsyncContextManager[None]]
_step_aside: ContextVar[StepAside | None] = ContextVar("memhub_step_aside", default=None)


def set_step_aside(aside: StepAside) -> Token[StepAside | None]:
    return _step_aside.set(aside)


def reset_step_aside(token: Token[StepAside | None]) -> None:
    _step_aside.reset(token)


@asynccontextmanager
async def waiting_outside() -> AsyncIterator[None]:
    """Around a wait that uses no CPU of this host (the curator's model, the embedding
    worker catching up): the call's place in the fair-share gate goes to the next call for the
    wait and is taken again, in turn, after it, so a slow remote holds no other tenant's call."""
    aside = _step_aside.get()
    if aside is None:
        yield
        return
    async with aside():
        yield


@dataclass
class _Slots:
    limit: int
    active: int = 0
    queue: deque[asyncio.Future[None]] = field(default_factory=deque)


@dataclass
class _Bucket:
    level: float
    updated: float


class Admission:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 max_waiting: int = MAX_WAITING, max_buckets: int = MAX_BUCKETS) -> None:
        self.clock = clock
        self.max_waiting = max_waiting
        self.max_buckets = max_buckets
        self._slots: dict[int, _Slots] = {}
        self._buckets: OrderedDict[int, _Bucket] = OrderedDict()

    # --- requests in flight ----------------------------------------------------------------
    async def enter(self, token_id: int, limit: int, wait: float) -> bool:
        """Whether a request of `token_id` may run now or within `wait` seconds; when True,
        the caller must `leave` once the request is done. `limit` is the token's as of this
        request (an operator may have changed it since the last)."""
        slots = self._slots.setdefault(token_id, _Slots(limit))
        slots.limit = limit
        if slots.active < limit and not slots.queue:
            slots.active += 1
            return True
        if wait <= 0 or len(slots.queue) >= self.max_waiting:
            return False
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        slots.queue.append(turn)
        self._hand_over(slots)  # the limit may have been raised
        try:
            async with asyncio.timeout(wait):
                await turn
            return True
        except TimeoutError:
            # Handed a slot just as the wait ran out: it is ours.
            return turn.done() and not turn.cancelled()
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.leave(token_id)  # cancelled after the hand-over: pass the slot on
            raise
        finally:
            if turn in slots.queue:
                slots.queue.remove(turn)
            self._forget_idle(token_id, slots)

    def leave(self, token_id: int) -> None:
        """A request admitted by `enter` is done: its slot goes to the first in the queue,
        unless the token is over a limit lowered since."""
        slots = self._slots.get(token_id)
        if slots is None:
            return
        slots.active -= 1
        self._hand_over(slots)
        self._forget_idle(token_id, slots)

    @staticmethod
    def _hand_over(slots: _Slots) -> None:
        while slots.queue and slots.active < slots.limit:
            turn = slots.queue.popleft()
            if not turn.done():  # not given up already
                turn.set_result(None)
                slots.active += 1

    def _forget_idle(self, token_id: int, slots: _Slots) -> None:
        if slots.active <= 0 and not slots.queue:
            self._slots.pop(token_id, None)

    # --- the rate --------------------------------------------------------------------------
    def take(self, token_id: int, per_minute: int, burst: int) -> float:
        """0 when one request is taken from the token's bucket; else the seconds until one is
        back (nothing taken)."""
        bucket = self._refilled(token_id, per_minute, burst)
        if bucket.level >= 1:
            bucket.level -= 1
            return 0.0
        return (1 - bucket.level) * 60 / per_minute

    def give_back(self, token_id: int, burst: int) -> None:
        """Return what `take` took for a request that was refused after all."""
        bucket = self._buckets.get(token_id)
        if bucket is not None:
            bucket.level = min(bucket.level + 1, burst)

    def _refilled(self, token_id: int, per_minute: int, burst: int) -> _Bucket:
        now = self.clock()
        bucket = self._buckets.get(token_id)
        if bucket is None:
            bucket = self._buckets[token_id] = _Bucket(float(burst), now)
            if len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(token_id)
        # A burst lowered since the last request caps what was saved up.
        bucket.level = min(bucket.level + (now - bucket.updated) * per_minute / 60, burst)
        bucket.updated = now
        return bucket

    # --- what stats and the dashboard show -------------------------------------------------
    def usage(self, token_id: int, per_minute: int = 0, burst: int = 0) -> dict[str, int]:
        """{"in_flight", "queued"} of the token in this process, and with a rate,
        "rate_available": the requests its bucket holds now."""
        slots = self._slots.get(token_id)
        out = {"in_flight": slots.active if slots else 0,
               "queued": len(slots.queue) if slots else 0}
        if per_minute > 0:
            bucket = self._buckets.get(token_id)
            out["rate_available"] = int(
                min(bucket.level + (self.clock() - bucket.updated) * per_minute / 60, burst)
                if bucket is not None else burst)
        return out
