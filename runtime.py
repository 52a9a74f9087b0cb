"""The process's services, typed: built by `create_app`, filled in by the app's lifespan.

Tools, the admin dashboard and the ASGI layer read what they need from one `Runtime`; nothing
reaches for a global. Background services run as tasks tied to the lifespan
(`run_until_shutdown`), so shutting the app down stops them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .admission import Admission
from .errors import Unavailable
from .metrics import Metrics
from .storage.activity import ActivityBuffer

if TYPE_CHECKING:
    from .config import Settings
    from .embedding.embedder import Embedder
    from .github.client import GitHubClient
    from .storage.base import StorageBackend
    from .storage.postgres.retrieval.embedding_queue import EmbeddingWorker


@dataclass
class Runtime:
    """Process-wide services. `backend` is None until the lifespan has opened the database."""

    settings: Settings
    version: str
    backend: StorageBackend | None = None
    embedder: Embedder | None = None
    embedding_worker: EmbeddingWorker | None = None
    # This app's own registry (memhub/metrics.py): never the process-wide default.
    metrics: Metrics = field(default_factory=Metrics)
    # Each token's requests in flight and rate in this process (gateway/token_limits.py).
    admission: Admission = field(default_factory=Admission)
    # Makes the GitHub client (app.py passes it, so the runtime imports no client); None in a
    # Runtime built without one (a test listing the tools), where GitHub is UNAVAILABLE.
    github_factory: Callable[[], GitHubClient] | None = None
    # Made on first use (usecases/reconcile.py): its ETags and rate-limit state last as long as
    # the process.
    _github: GitHubClient | None = None
    # The activity log's rows on their way to the database (storage/activity.py): the tool
    # middleware appends, a lifespan task writes.
    activity: ActivityBuffer = field(init=False)

    def __post_init__(self) -> None:
        self.activity = ActivityBuffer(on_drop=self.metrics.activity_rows_dropped)

    def github(self) -> GitHubClient:
        """The process's GitHub client; UNAVAILABLE when this Runtime was given none."""
        if self._github is None:
            if self.github_factory is None:
                raise Unavailable("this process has no GitHub client")
            self._github = self.github_factory()
        return self._github

    async def close_github(self) -> None:
        if self._github is not None:
            await self._github.close()
            self._github = None

    def storage(self) -> StorageBackend:
        """The backend; UNAVAILABLE while the process is starting or stopping."""
        if self.backend is None:
            raise Unavailable("the storage backend is not ready yet")
        return self.backend


def run_until_shutdown(stack: AsyncExitStack, coro: Coroutine[Any, Any, None], name: str) -> None:
    """Run `coro` as a task for the app's lifetime; the lifespan's exit cancels and awaits it."""
    task = asyncio.create_task(coro, name=name)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)
