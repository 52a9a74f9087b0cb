"""The activity log: one row per MCP tool call, free of content (migration 0047).

A `ToolEvent` holds what the server knows of a call without reading it: the tool, the
namespace it named (only one its token may see), the token's surface and id, the error code
it was answered with (None: it succeeded), how long it took and when it ended. It has no field
for an argument or a result, so none can reach the table.

Recording costs the call path an append to a bounded buffer in memory (`ActivityBuffer`); a
background task writes the buffer in batches. When the buffer is full, or the database refuses
a batch, rows are dropped and counted (memhub_activity_dropped_total): the log is for the
operator, and a tool call never waits for it or fails because of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput, MemhubError
from .principal import NAMESPACE_RE

logger = logging.getLogger(__name__)

BUFFER_ROWS = 10_000  # ~1.5 MB at most; at 1,000 calls a second, ten seconds of writes lost
BATCH_ROWS = 1_000  # one INSERT: every row a call to unnest() away
FLUSH_SECONDS = 1.0
LIST_MAX = 1_000
DROPPED_REASONS = ("overflow", "write_failed")


@dataclass(frozen=True, slots=True)
class ToolEvent:
    tool: str
    namespace: str | None
    surface: str
    token_id: int | None
    error_code: str | None  # None: the call succeeded
    duration_ms: float
    ended: float  # time.monotonic() when the call ended: the writer turns it into an age


def check_activity_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIST_MAX:
        raise InvalidInput(f"limit must be between 1 and {LIST_MAX}", field="limit")
    return limit


def check_activity_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput("namespace must be 1-64 chars of a-z, 0-9, '.', '_' or '-'",
                           field="namespace")
    return namespace


class ActivityBackend(ABC):
    @abstractmethod
    async def write_tool_events(self, events: Sequence[ToolEvent]) -> None:
        """Insert `events` in one statement, `at` on the database clock (now, less each
        event's age). Raises a MemhubError when the database refuses."""

    @abstractmethod
    async def tool_activity(self, namespace: str, *, limit: int = 100) -> dict[str, Any]:
        """The operator's view of a namespace's latest calls, newest first: {"namespace",
        "events": [{"at", "tool", "surface", "token_id", "outcome", "error_code",
        "duration_ms"}]}. INVALID_INPUT for a bad namespace or a limit outside 1-1000."""


class ActivityBuffer:
    """The rows waiting to be written. `record` never blocks and never raises."""

    def __init__(self, capacity: int = BUFFER_ROWS,
                 on_drop: Callable[[str, int], None] = lambda reason, n: None) -> None:
        self._rows: deque[ToolEvent] = deque()
        self.capacity = capacity
        self.on_drop = on_drop
        self._full = asyncio.Event()

    def __len__(self) -> int:
        return len(self._rows)

    def record(self, event: ToolEvent) -> None:
        if len(self._rows) >= self.capacity:
            self.on_drop("overflow", 1)
            return
        self._rows.append(event)
        if len(self._rows) >= BATCH_ROWS:
            self._full.set()

    def _take(self) -> list[ToolEvent]:
        batch = [self._rows.popleft() for _ in range(min(BATCH_ROWS, len(self._rows)))]
        if len(self._rows) < BATCH_ROWS:
            self._full.clear()
        return batch

    async def flush(self, backend: ActivityBackend) -> int:
        """Write what is buffered now, batch by batch; return the rows written. A batch the
        database refuses is dropped (counted): it is not retried into a growing backlog."""
        written = 0
        while self._rows:
            batch = self._take()
            try:
                await backend.write_tool_events(batch)
            except MemhubError as err:
                logger.warning("activity rows dropped: the write failed",
                               extra={"code": err.code, "rows": len(batch)})
                self.on_drop("write_failed", len(batch))
                continue
            except Exception:  # a bug here must not end the writer: later rows still go
                logger.exception("activity rows dropped: the write failed",
                                 extra={"rows": len(batch)})
                self.on_drop("write_failed", len(batch))
                continue
            written += len(batch)
        return written

    async def write_forever(self, backend: ActivityBackend,
                            period: float = FLUSH_SECONDS) -> None:
        """Flush every `period` seconds, or at once when a batch is full; when cancelled
        (the app stopping), flush what is left first."""
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._full.wait(), period)
                await self.flush(backend)
        except asyncio.CancelledError:
            await self.flush(backend)
            raise


def tool_event(tool: str, namespace: Any, *, surface: str, token_id: int | None,
               may_see: Callable[[str], bool], error_code: str | None,
               seconds: float) -> ToolEvent:
    """The row of one call: `namespace` (the call's argument, whatever its type) kept only
    when it is a well-formed name the token may see; anything else is None, so no tenant is
    shown a call it did not make and no argument text reaches the table."""
    named = (namespace if isinstance(namespace, str) and NAMESPACE_RE.fullmatch(namespace)
             and may_see(namespace) else None)
    return ToolEvent(tool=tool, namespace=named, surface=surface, token_id=token_id,
                     error_code=error_code, duration_ms=round(seconds * 1000, 3),
                     ended=time.monotonic())
