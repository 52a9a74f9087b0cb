"""The periodic sweep that marks memories past `expires_at` as EXPIRED.

Reads never depend on it: the stage-0 predicate (`live_memories`) hides an expired memory at
once, and writes expire their namespace lazily. The sweep only makes the stored status (and
the audit listings) catch up, every `MEMHUB_EXPIRY_SWEEP_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..errors import MemhubError
from .base import StorageBackend

logger = logging.getLogger(__name__)


async def sweep_forever(backend: StorageBackend, period: float,
                        record_run: Callable[[bool], None] = lambda ok: None) -> None:
    """Expire what is due every `period` seconds, until cancelled; `record_run(ok)` after each
    run (the app's metrics)."""
    while True:
        try:
            expired = await backend.expire_due()
            if expired:
                logger.info("expired memories", extra={"count": expired})
        except MemhubError as err:
            # A database blip must not kill the sweep; the next period tries again.
            logger.warning("expiry sweep failed", extra={"code": err.code})
            record_run(False)
        else:
            record_run(True)
        await asyncio.sleep(period)
