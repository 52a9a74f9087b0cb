"""`steps_run`: what a sequence tool (session_bootstrap, recall, namespace_init) reports of the
steps the server ran for it, in order, each with its status and time.

A step is ok, degraded (it failed, or answered with less than it should: its error or reason
says which) or skipped (why). A step the answer cannot do without is `essential`: its failure
is the call's error, as it would be without steps; any other step's failure degrades that
step only, and the later steps still run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import MemhubError

logger = logging.getLogger(__name__)

T = TypeVar("T")
ERROR_CHARS = 160  # of a degraded step's message: the code says what; the rest is in the log


class Skipped(Exception):  # noqa: N818 (a step's outcome, not an error)
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class StepLog:
    records: list[dict[str, Any]] = field(default_factory=list)

    async def run(self, name: str, fn: Callable[[], Awaitable[T]], *,
                  essential: bool = False) -> T | None:
        """`fn()`'s result, its record appended; None when it was skipped or degraded."""
        started = time.perf_counter()
        record: dict[str, Any] = {"step": name}
        result: T | None = None
        try:
            result = await fn()
        except Skipped as skip:
            record.update(status="skipped", reason=skip.reason)
        except MemhubError as err:
            if essential:
                raise
            record.update(status="degraded",
                          error={"code": err.code, "message": err.message[:ERROR_CHARS]})
        except Exception as exc:
            if essential:
                raise
            # A bug or an outage in one step must not lose the others.
            logger.exception("step failed", extra={"step": name})
            record.update(status="degraded",
                          error={"code": "INTERNAL", "message": type(exc).__name__})
        else:
            record["status"] = "ok"
        record["ms"] = round((time.perf_counter() - started) * 1000, 1)
        self.records.append(record)
        return result

    def degrade(self, reason: str) -> None:
        """Mark the last step degraded: it ran, with less than it should (`reason`)."""
        self.records[-1].update(status="degraded", reason=reason)
