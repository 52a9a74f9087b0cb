"""The one LISTEN loop: a connection of its own on a channel, each notification handed on.

LISTEN needs a session that stays ours, so it runs on `PgCore.listen_dsn` (None behind a
transaction pooler without a direct URL: callers then poll or rely on a TTL). A notification
sent while the connection was down is lost, so `on_connect` runs on every (re)connection,
before the first notification is read, for the caller to forget what it can no longer trust.
The loop reconnects with a doubling backoff; `listening` says whether it holds a connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

BACKOFF_START = 0.5
BACKOFF_MAX = 30.0


class Listener:
    def __init__(self, dsn: str, channel: str, on_notify: Callable[[str], None], *,
                 on_connect: Callable[[], None] | None = None, lost: str) -> None:
        """`lost`: the warning logged when the connection drops (what callers do meanwhile)."""
        self.dsn = dsn
        self.channel = channel
        self.on_notify = on_notify
        self.on_connect = on_connect
        self.lost = lost
        self.listening = False
        self._task: asyncio.Task | None = None

    def start(self, name: str) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self.listening = False

    async def _loop(self) -> None:
        delay = BACKOFF_START
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.dsn,
                                                                 autocommit=True) as conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    if self.on_connect is not None:
                        self.on_connect()
                    self.listening = True
                    delay = BACKOFF_START
                    async for note in conn.notifies():
                        self.on_notify(note.payload)
            except asyncio.CancelledError:
                self.listening = False
                raise
            except Exception as exc:
                self.listening = False
                logger.warning(self.lost, extra={"channel": self.channel,
                                                 "error": type(exc).__name__})
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
