"""The intent gate's per-process cache: per namespace, whether the gate is on (the profile's
`intent_gate`) and the namespace's skills, so a gated write or an intent_open does not read
them every call.

Invalidation across processes: migration 0033's triggers NOTIFY channel `memhub_gate` with the
namespace whenever a profile or a skill changes (whichever process or tool wrote it), and a
listener here drops that namespace's entry. LISTEN needs a session of its own: behind a
transaction pooler it listens on MEMHUB_DIRECT_DATABASE_URL (`PgCore.listen_dsn`); without one,
or while the listener is down, only the TTL (MEMHUB_GATE_CACHE_TTL_SECONDS) bounds staleness.
A load that started before an invalidation is thrown away (the generation check), so a NOTIFY
that arrives mid-load is never lost.

Bounded work: an entry holds at most a namespace's skill limit (gate_input.SKILLS_MAX, the
load's LIMIT), so an intent_open evaluates at most that many triggers; the cache keeps at most
ENTRIES_MAX namespaces (the least recently used goes first), and a notification about a
namespace that is neither cached nor loading leaves nothing behind, so a flood of them costs
one dictionary lookup each and no memory.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..listener import Listener

logger = logging.getLogger(__name__)

CHANNEL = "memhub_gate"
ENTRIES_MAX = 64


@dataclass(frozen=True)
class GateEntry:
    gate_on: bool
    profile_version: int
    skills: tuple[dict[str, Any], ...]
    tier2: bool = False  # the profile asks for tier 2's review of previews
    loaded_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    loaded_mono: float = field(default_factory=time.monotonic)


class GateCache:
    def __init__(self, ttl_seconds: float, listen_dsn: str | None, *,
                 entries_max: int = ENTRIES_MAX) -> None:
        self.ttl = ttl_seconds
        self.listen_dsn = listen_dsn
        self.entries_max = entries_max
        self.invalidations = 0
        self._entries: OrderedDict[str, GateEntry] = OrderedDict()
        # Per namespace with a load in flight: (loads in flight, invalidations since the
        # first began). Nothing is kept for a namespace nobody is loading.
        self._loading: dict[str, list[int]] = {}
        self._listener = (None if listen_dsn is None else Listener(
            listen_dsn, CHANNEL, self.invalidate, on_connect=self._forget_all,
            lost="gate cache listener lost; TTL only meanwhile"))
        self._started = False

    @property
    def listening(self) -> bool:
        return self._listener is not None and self._listener.listening

    def _forget_all(self) -> None:
        # Whatever changed while nobody listened is unknown: start clean.
        for namespace in [*self._entries, *self._loading]:
            self.invalidate(namespace)

    def peek(self, namespace: str) -> GateEntry | None:
        """The entry if cached, without loading it (the listener is started, so a status
        read reports whether changes from other processes can arrive)."""
        self._start()
        return self._entries.get(namespace)

    async def get(self, namespace: str,
                  load: Callable[[], Awaitable[GateEntry]]) -> GateEntry:
        self._start()
        entry = self._entries.get(namespace)
        if entry is not None and time.monotonic() - entry.loaded_mono < self.ttl:
            self._entries.move_to_end(namespace)
            return entry
        state = self._loading.setdefault(namespace, [0, 0])
        state[0] += 1
        seen = state[1]
        try:
            entry = await load()
        finally:
            state[0] -= 1
            if state[0] == 0:
                del self._loading[namespace]
        if state[1] == seen:
            self._entries[namespace] = entry
            self._entries.move_to_end(namespace)
            while len(self._entries) > self.entries_max:
                self._entries.popitem(last=False)
        return entry

    def invalidate(self, namespace: str) -> None:
        state = self._loading.get(namespace)
        if state is not None:
            state[1] += 1
        if self._entries.pop(namespace, None) is not None:
            self.invalidations += 1

    def _start(self) -> None:
        if self._listener is not None and not self._started:
            self._started = True
            self._listener.start("memhub-gate-listen")

    async def stop(self) -> None:
        if self._listener is not None:
            await self._listener.stop()
        self._started = False
