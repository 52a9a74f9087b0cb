"""Garbage collection: what nothing needs any more leaves the database (migration 0024).

Spent idempotency answers, long-dead embedding jobs, artifact bytes no namespace references,
expired /admin rows, change-feed entries older than their retention (migration 0028),
activity-log rows older than theirs (migration 0047). Every memhub process runs
`collect_forever`; one run at a time happens across all of them (the others skip), and
`memhub-admin gc` runs one on demand.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..errors import MemhubError

logger = logging.getLogger(__name__)

# The first run waits this long after start-up (or one period, if shorter): a process that is
# restarted often still collects, and one that starts beside others does not add a run.
STARTUP_DELAY = 300.0
# Pause between runs while a backlog lasts (a run removes at most `batch` rows per kind).
BACKLOG_PAUSE = 1.0


@dataclass(frozen=True)
class RetentionPolicy:
    """How old each kind of garbage must be before it goes (MEMHUB_* settings)."""

    idempotency_ttl_seconds: int
    dead_job_ttl_seconds: int
    artifact_grace_seconds: int
    batch: int = 10_000
    change_feed_retention_days: int = 30
    activity_retention_days: int = 14

    @classmethod
    def from_settings(cls, settings: Settings) -> RetentionPolicy:
        return cls(idempotency_ttl_seconds=settings.idempotency_ttl_seconds,
                   dead_job_ttl_seconds=settings.dead_job_ttl_seconds,
                   artifact_grace_seconds=settings.artifact_grace_seconds,
                   change_feed_retention_days=settings.change_feed_retention_days,
                   activity_retention_days=settings.activity_retention_days)


class GcBackend(ABC):
    @abstractmethod
    async def collect_garbage(self, policy: RetentionPolicy, *, dry_run: bool = False,
                              trigger: str = "scheduled",
                              min_gap_seconds: float | None = None) -> dict[str, Any]:
        """One run: {"ran": true, "dry_run", "removed": {kind: rows}, "more", "at"}, where
        `more` says some kind had more than the batch; a dry run counts and removes nothing.
        {"ran": false, "reason": "busy"} when another run holds the lock, "recent" when
        `min_gap_seconds` is given and a run finished less than that ago. Runs are recorded
        (never dry ones) for `last_gc_run`."""

    @abstractmethod
    async def last_gc_run(self) -> dict[str, Any] | None:
        """The latest recorded run: {"at", "trigger", "removed", "more"}, or None."""


async def collect_forever(backend: GcBackend, policy: RetentionPolicy, period: float,
                          record_run: Callable[[bool], None] = lambda ok: None) -> None:
    """Collect every `period` seconds until cancelled; `record_run(ok)` after each attempt
    (the app's metrics). A run that finds a backlog is followed by the next one at once."""
    delay = min(period, STARTUP_DELAY)
    backlog = False
    while True:
        await asyncio.sleep(delay)
        delay = period
        try:
            report = await backend.collect_garbage(
                policy, min_gap_seconds=None if backlog else period / 2)
        except MemhubError as err:
            # A database blip must not end the loop; the next period tries again.
            logger.warning("garbage collection failed", extra={"code": err.code})
            record_run(False)
            backlog = False
            continue
        record_run(True)
        backlog = bool(report["ran"] and report["more"])
        if report["ran"]:
            logger.info("garbage collected", extra={"removed": report["removed"],
                                                    "more": report["more"]})
        else:
            logger.debug("garbage collection skipped", extra={"reason": report["reason"]})
        if backlog:
            delay = min(period, BACKLOG_PAUSE)
