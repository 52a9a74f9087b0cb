"""A token's requests in flight and its token bucket (admission.py), in one process: no
database, a clock the test moves, and waits that end on a condition."""

from __future__ import annotations

import asyncio

import pytest

from memhub.admission import Admission
from tests.support.wait import until

A, B = 1, 2


async def queued(admission: Admission, n: int) -> None:
    async def reached() -> bool:
        return admission.usage(A)["queued"] >= n

    await until(reached, what=f"{n} queued")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_the_request_past_the_limit_is_refused_while_another_token_is_admitted():
    admission = Admission()
    assert [await admission.enter(A, 2, 0) for _ in range(2)] == [True, True]
    assert await admission.enter(A, 2, 0) is False
    assert await admission.enter(B, 2, 0) is True
    assert admission.usage(A) == {"in_flight": 2, "queued": 0}


async def test_one_request_at_a_time_never_meets_the_limit():
    admission = Admission()
    for _ in range(100):
        assert await admission.enter(A, 1, 0)
        admission.leave(A)
    assert admission.usage(A) == {"in_flight": 0, "queued": 0}
    assert admission._slots == {}  # an idle token costs no memory


async def test_a_queued_request_gets_the_slot_a_finished_one_frees():
    admission = Admission()
    assert await admission.enter(A, 1, 0)
    waiting = asyncio.create_task(admission.enter(A, 1, 30))
    await queued(admission, 1)
    late = asyncio.create_task(admission.enter(A, 1, 30))
    await queued(admission, 2)
    admission.leave(A)
    assert await waiting is True  # first come, first served
    assert not late.done()
    assert admission.usage(A) == {"in_flight": 1, "queued": 1}
    admission.leave(A)
    assert await late is True
    admission.leave(A)
    assert admission._slots == {}


async def test_a_wait_that_runs_out_is_refused_and_leaves_nothing_behind():
    admission = Admission()
    assert await admission.enter(A, 1, 0)
    assert await admission.enter(A, 1, 0.01) is False
    assert admission.usage(A) == {"in_flight": 1, "queued": 0}
    admission.leave(A)
    assert admission._slots == {}


async def test_the_queue_is_bounded():
    admission = Admission(max_waiting=2)
    assert await admission.enter(A, 1, 0)
    waiters = [asyncio.create_task(admission.enter(A, 1, 30)) for _ in range(2)]
    await queued(admission, 2)
    assert await admission.enter(A, 1, 30) is False  # refused at once, not queued
    for waiter in waiters:
        admission.leave(A)
        assert await waiter is True


async def test_a_cancelled_waiter_hands_its_slot_on():
    admission = Admission()
    assert await admission.enter(A, 1, 0)
    first = asyncio.create_task(admission.enter(A, 1, 30))
    second = asyncio.create_task(admission.enter(A, 1, 30))
    await queued(admission, 2)
    first.cancel()
    admission.leave(A)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await second is True
    assert admission.usage(A) == {"in_flight": 1, "queued": 0}


async def test_a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on():
    admission = Admission()
    assert await admission.enter(A, 1, 0)
    first = asyncio.create_task(admission.enter(A, 1, 30))
    second = asyncio.create_task(admission.enter(A, 1, 30))
    await queued(admission, 2)
    admission.leave(A)  # the slot is first's now, before it has run again
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await second is True
    assert admission.usage(A) == {"in_flight": 1, "queued": 0}


async def test_a_lowered_limit_holds_the_queue_until_the_token_is_under_it():
    admission = Admission()
    assert [await admission.enter(A, 2, 0) for _ in range(2)] == [True, True]
    waiting = asyncio.create_task(admission.enter(A, 1, 30))  # the operator lowered it to 1
    await queued(admission, 1)
    admission.leave(A)
    await asyncio.sleep(0)  # a turn of the loop: the waiter would run now if handed a slot
    assert not waiting.done()  # 1 in flight: at the new limit
    admission.leave(A)
    assert await waiting is True


def test_the_rate_refuses_past_the_burst_and_recovers():
    clock = Clock()
    admission = Admission(clock=clock)
    assert [admission.take(A, 60, 3) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = admission.take(A, 60, 3)
    assert wait == pytest.approx(1.0)  # 60 a minute: one back each second
    assert admission.take(B, 60, 3) == 0.0  # another token's bucket is its own
    clock.now += 0.5
    assert admission.take(A, 60, 3) == pytest.approx(0.5)
    clock.now += 0.5
    assert admission.take(A, 60, 3) == 0.0
    clock.now += 3600
    assert [admission.take(A, 60, 3) for _ in range(4)][-1] > 0  # refilled to the burst only
    assert admission.usage(A, 60, 3)["rate_available"] == 0


def test_a_refused_request_is_given_back():
    admission = Admission(clock=Clock())
    assert admission.take(A, 60, 1) == 0.0
    admission.give_back(A, 1)
    assert admission.take(A, 60, 1) == 0.0


def test_the_buckets_are_bounded():
    admission = Admission(clock=Clock(), max_buckets=3)
    for token in range(10):
        admission.take(token, 60, 5)
    assert list(admission._buckets) == [7, 8, 9]
