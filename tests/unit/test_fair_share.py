"""The gate in front of tool calls (gateway/fair_share.py): at most `slots` calls at once, and
the waiting ones let in by turns across namespaces, so a namespace's call never waits behind
another namespace's whole line. Orders are asserted, never times."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from memhub.gateway.fair_share import FairShare, call_key

PRINCIPAL = SimpleNamespace(token_id=7)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class Caller:
    """A call that takes a place under `key`, records when it got in, and leaves on `done`."""

    def __init__(self, share: FairShare, name: str, key: str, log: list[str]) -> None:
        self.done = asyncio.Event()

        async def run() -> None:
            async with share.place(key):
                log.append(name)
                await self.done.wait()

        self.task = asyncio.ensure_future(run())


async def test_a_quiet_namespace_waits_for_one_place_not_for_a_floods_line():
    share, log = FairShare(1), []
    callers = {"a0": Caller(share, "a0", "ns:a", log)}
    await settle()
    for i in range(1, 4):
        callers[f"a{i}"] = Caller(share, f"a{i}", "ns:a", log)
    await settle()
    callers["b1"] = Caller(share, "b1", "ns:b", log)
    await settle()
    for _ in range(len(callers)):
        callers[log[-1]].done.set()  # the call in progress ends; the next gets its place
        await settle()
    # First come, first served would be a0 a1 a2 a3 b1.
    assert log == ["a0", "a1", "b1", "a2", "a3"]
    assert share.active == 0 and share.waiting == 0


async def test_no_more_calls_run_at_once_than_the_slots():
    share, log = FairShare(2), []
    callers = [Caller(share, f"c{i}", f"ns:{i % 3}", log) for i in range(7)]
    await settle()
    assert len(log) == 2 and share.active == 2 and share.waiting == 5
    for caller in callers:
        caller.done.set()
        await settle()
        assert share.active <= 2
    assert len(log) == 7 and share.active == 0


async def test_a_waiter_that_gives_up_leaves_no_place_taken():
    share, log = FairShare(1), []
    holder = Caller(share, "h", "ns:a", log)
    await settle()
    gone = Caller(share, "gone", "ns:b", log)
    later = Caller(share, "later", "ns:c", log)
    await settle()
    gone.task.cancel()
    await settle()
    holder.done.set()
    await settle()
    assert log == ["h", "later"]
    later.done.set()
    await settle()
    assert share.active == 0 and share.waiting == 0


async def test_a_place_handed_to_a_cancelled_waiter_passes_on():
    share, log = FairShare(1), []
    holder = Caller(share, "h", "ns:a", log)
    await settle()
    handed = Caller(share, "handed", "ns:b", log)
    next_one = Caller(share, "next", "ns:c", log)
    await settle()
    holder.done.set()
    handed.task.cancel()  # cancelled in the same turn of the loop the place is handed over
    await settle()
    assert log[-1] == "next" and share.active == 1
    next_one.done.set()
    await settle()
    assert share.active == 0


def body(name: str, arguments: dict | None = None, method: str = "tools/call") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": {"name": name, "arguments": arguments or {}}}).encode()


@pytest.mark.parametrize(("raw", "key"), [
    (body("memory_search", {"namespace": "acme", "query": "x"}), "ns:acme"),
    (body("stats"), "token:7"),
    (body("memory_search", {"namespace": "x" * 201}), "token:7"),
    (body("coord_reconcile", {"namespace": "acme"}), None),
    (body("coord_curate", {"namespace": "acme"}), None),
    (body("", method="tools/list"), None),
    (b'{"jsonrpc": "2.0", "method": "initialize", "id": 1, "params": {}}', None),
    (None, None),
    (b"[" + body("memory_search", {"namespace": "acme"}) + b"]", "token:7"),
    (b'{"method": "tools/call", not json', "token:7"),
])
def test_a_call_waits_in_its_namespaces_line_or_its_tokens(raw, key):
    assert call_key(raw, PRINCIPAL) == key


async def test_a_call_waiting_outside_gives_its_place_up_and_takes_it_again_in_turn():
    """admission.waiting_outside (a tier-2 review, pacing): the place goes to the next call for
    the wait; after it the call waits in its own line again, and leaves nothing behind."""
    from memhub import admission

    share, log = FairShare(1), []
    outside = asyncio.Event()

    async def reviewer() -> None:
        async with share.place("ns:a") as held:
            token = admission.set_step_aside(held.aside)
            try:
                async with admission.waiting_outside():
                    log.append("a waits outside")
                    await outside.wait()
                log.append("a back")
            finally:
                admission.reset_step_aside(token)

    task = asyncio.ensure_future(reviewer())
    await settle()
    other = Caller(share, "b", "ns:b", log)
    await settle()
    assert log == ["a waits outside", "b"]  # b ran while a's model thought
    outside.set()
    await settle()
    assert log == ["a waits outside", "b"]  # a waits for its turn back
    other.done.set()
    await asyncio.wait_for(task, 2)
    assert log[-1] == "a back" and share.active == 0 and share.waiting == 0


async def test_waiting_outside_without_a_gate_just_waits():
    from memhub import admission

    async with admission.waiting_outside():
        pass
