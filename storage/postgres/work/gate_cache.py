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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..listener import Listener

logger = logging.getLogger(__name__)

CHANNEL = "memhub_gate"


@dataclass(frozen=True)
class GateEntry:
    gate_on: bool
    profile_version: int
    skills: tuple[dict[str, Any], ...]
    loaded_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    loaded_mono: float = field(default_factory=time.monotonic)


class GateCache:
    def __init__(self, ttl_seconds: float, listen_dsn: str | None) -> None:
        self.ttl = ttl_seconds
        self.listen_dsn = listen_dsn
        self.invalidations = 0
        self._entries: dict[str, GateEntry] = {}
        self._generation: dict[str, int] = {}
        self._listener = (None if listen_dsn is None else Listener(
            listen_dsn, CHANNEL, self.invalidate, on_connect=self._forget_all,
            lost="gate cache listener lost; TTL only meanwhile"))
        self._started = False

    @property
    def listening(self) -> bool:
        return self._listener is not None and self._listener.listening

    def _forget_all(self) -> None:
        # Whatever changed while nobody listened is unknown: start clean.
        for namespace in list(self._entries):
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
            return entry
        generation = self._generation.get(namespace, 0)
        entry = await load()
        if self._generation.get(namespace, 0) == generation:
            self._entries[namespace] = entry
        return entry

    def invalidate(self, namespace: str) -> None:
        self._generation[namespace] = self._generation.get(namespace, 0) + 1
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
