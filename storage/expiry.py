"""The periodic sweep that marks memories past `expires_at` as EXPIRED.

Reads never depend on it: the stage-0 predicate (`live_memories`) hides an expired memory at
once, and writes expire their namespace lazily. The sweep only makes the stored status (and
the audit listings) catch up, every `MEMHUB_EXPIRY_SWEEP_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack

from errors import MemhubError
from storage.background import run_until_shutdown
from tools.context import Runtime

logger = logging.getLogger(__name__)


async def sweep_forever(rt: Runtime) -> None:
    period = rt.settings.expiry_sweep_seconds
    while True:
        try:
            expired = await rt.storage().expire_due()
            if expired:
                logger.info("expired memories", extra={"count": expired})
        except MemhubError as err:
            # A database blip must not kill the sweep; the next period tries again.
            logger.warning("expiry sweep failed", extra={"code": err.code})
        await asyncio.sleep(period)


async def start(rt: Runtime, stack: AsyncExitStack) -> None:
    run_until_shutdown(stack, sweep_forever(rt), "memhub-expiry-sweep")
