"""Tool calls run a bounded number at a time; the ones waiting are let in by turns across
namespaces.

Why: every stage a call passes in this process and behind it is first come, first served: the
event loop's ready queue, asyncio's threads that embed queries, the connection pool, and the two
cores PostgreSQL and the model share. With twelve clients of one tenant flooding, a quiet
tenant's search queued behind a dozen of the flood's calls at each of them (p50 6.9 -> 88.6 ms,
docs/performance.md, "Fair to every tenant"). Here at most `slots` tool calls are in progress
(MEMHUB_MAX_ACTIVE_CALLS, one per two cores: one call in progress already keeps two cores
busy); a call beyond that waits in its namespace's line, and each freed place goes to the next
namespace in turn. A flood then holds at most the places it had, and a quiet namespace's call
waits for one place to free, never for the flood's whole line. Behind the gate, the stages see
a few calls each, so they stay short.

The key is the `namespace` argument of a `tools/call` (read from a body of at most PEEK_BYTES,
as gateway/query_prefetch.py does); a call without one waits in its token's line. A body too
large to peek (an artifact upload) passes without a place: its time goes to reading it. Tools
that wait on an outside service (OUTSIDE_SERVICE: GitHub, the curator's model) pass without a
place, so a slow remote holds no one else's; a call that waits on one midway (the intent
gate's tier-2 review, pacing) gives its place up for the wait (admission.waiting_outside) and
takes it again in turn. Anything else (initialize, tools/list, GET)
passes. Only authenticated requests get here. Per-token limits on calls in flight bound what
one token can put in these lines; this decides the order in which what is waiting gets in.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from .. import admission, bounded_json
from .body_limit import peek_body, replaying

Scope = dict[str, Any]
PEEK_BYTES = 16 * 1024
# Tools whose call waits on a service outside this process: they hold no place.
OUTSIDE_SERVICE = frozenset({"coord_reconcile", "coord_curate"})
# A namespace argument longer than this is not a namespace (the tool refuses it): its call
# waits in its token's line, so the lines' keys stay small.
MAX_KEY = 200


class FairShare:
    """At most `slots` holders at once; waiters admitted round-robin by key, each key's in
    arrival order. Runs on one event loop (no locks: every change happens between awaits)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self.slots = slots
        self.active = 0
        # key -> its waiters, oldest first; the keys in turn order (the next to be served
        # first: a served key goes to the back, a new key joins at the back).
        self._lines: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def waiting(self) -> int:
        return sum(len(line) for line in self._lines.values())

    @asynccontextmanager
    async def place(self, key: str):
        await self.enter(key)
        held = Place(self, key)
        try:
            yield held
        finally:
            if held.held:
                self.leave()

    async def enter(self, key: str) -> None:
        """Return once the caller holds a place (it must `leave` once done)."""
        if self.active < self.slots and not self._lines:
            self.active += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines.setdefault(key, deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.leave()  # handed a place while being cancelled: pass it on
            else:
                self._forget(key, waiter)
            raise

    def leave(self) -> None:
        """Give the place up: to the first waiter of the next key in turn, or back."""
        while self._lines:
            key, line = next(iter(self._lines.items()))
            waiter = line.popleft()
            if line:
                self._lines.move_to_end(key)
            else:
                del self._lines[key]
            if not waiter.done():
                waiter.set_result(None)  # the place passes on: `active` is unchanged
                return
        self.active -= 1

    def _forget(self, key: str, waiter: asyncio.Future[None]) -> None:
        line = self._lines.get(key)
        if line is not None and waiter in line:
            line.remove(waiter)
            if not line:
                del self._lines[key]


class Place:
    """A call's place, which it may give up while it waits on something outside (`aside`,
    admission.waiting_outside)."""

    def __init__(self, share: FairShare, key: str) -> None:
        self.share, self.key, self.held = share, key, True

    @asynccontextmanager
    async def aside(self):
        if not self.held:  # already aside (a nested wait)
            yield
            return
        self.share.leave()
        self.held = False
        try:
            yield
        finally:
            # Back in its namespace's line: if cancelled there, it holds nothing to give up.
            await self.share.enter(self.key)
            self.held = True


def call_key(body: bytes | None, principal: Any) -> str | None:
    """The line a request's call waits in: `ns:<namespace>` or `token:<id>`; None for a
    request that passes without a place (not a tools/call, or a tool in OUTSIDE_SERVICE)."""
    token = f"token:{getattr(principal, 'token_id', '')}"
    if body is None:
        # Too large to peek: an upload, whose time goes to reading its body from the client;
        # holding a place for it would let one slow sender stall every tenant.
        return None
    if b'"tools/call"' not in body:
        return None
    try:
        message = bounded_json.loads(body)
    except ValueError:
        return token
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return token if not isinstance(message, dict) else None
    params = message.get("params")
    if not isinstance(params, dict):
        return token
    if params.get("name") in OUTSIDE_SERVICE:
        return None
    arguments = params.get("arguments")
    namespace = arguments.get("namespace") if isinstance(arguments, dict) else None
    if isinstance(namespace, str) and 0 < len(namespace) <= MAX_KEY:
        return f"ns:{namespace}"
    return token


class FairGate:
    def __init__(self, app: Callable[..., Awaitable[None]], share: FairShare,
                 path: str = "/mcp") -> None:
        self.app = app
        self.share = share
        self.path = path

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        principal = (scope.get("state") or {}).get("principal")
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path") != self.path or principal is None):
            await self.app(scope, receive, send)
            return
        read, body = await peek_body(receive, PEEK_BYTES)
        key = call_key(body, principal)
        if key is None:
            await self.app(scope, replaying(read, receive), send)
            return
        async with self.share.place(key) as held:
            token = admission.set_step_aside(held.aside)
            try:
                await self.app(scope, replaying(read, receive), send)
            finally:
                admission.reset_step_aside(token)
