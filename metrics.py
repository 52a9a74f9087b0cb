"""Prometheus metrics: one registry per app, served by `GET /metrics` (gateway/metrics_route.py).

`create_app` builds one `Metrics` (its own `CollectorRegistry`, never the process-wide default:
several apps in one process, as in the tests, would otherwise collide). The gateway, the MCP
middleware (tools/metrics_middleware.py) and the background jobs write to it through the
small methods below; what lives elsewhere (the pool, the embedding queue, the worker's totals)
is read when a scrape asks (`sample`).

Every label's values are bounded by construction: tool names outside the server's tool list
count as "unknown", error codes outside errors.py's as INTERNAL, paths fold into `ROUTES`, jobs
are `JOBS`. No namespace, token, memory id or client address is ever a label: each value of a
label is a series kept by the scraper, and these would also tell anyone who reads the metrics
which projects use memhub.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from .errors import Internal, MemhubError
from .storage.activity import DROPPED_REASONS

if TYPE_CHECKING:
    from .storage.base import StorageBackend
    from .storage.postgres.retrieval.embedding_queue import EmbeddingWorker

logger = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST
UNKNOWN_TOOL = "unknown"
ROUTES = ("/mcp", "/admin", "/artifact", "/healthz", "/metrics")
OTHER_ROUTE = "other"
JOBS = ("expiry_sweep", "lexicon_refresh", "embedding_worker", "gc")
REFUSALS = ("missing", "invalid", "rate_limited")
# A token's limits (gateway/token_limits.py) and a namespace's quota (a write refused
# QUOTA_EXCEEDED, counted by tools/metrics_middleware.py).
LIMIT_REFUSALS = ("in_flight", "rate", "quota")
# Tool calls run from about a millisecond (a key lookup) to seconds (a cold search, a 50 MB
# artifact); the default buckets start at 5 ms and would lump the fast calls together.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0)
# A scrape storm (several scrapers, a dashboard's refresh) reads the queue once per this many
# seconds; scrapers ask every 15-60 s, so the figure is never staler than they can tell.
QUEUE_CACHE_SECONDS = 5.0


def route_label(path: str) -> str:
    """The route a path belongs to, from the fixed `ROUTES` (else "other")."""
    for route in ROUTES:
        if path == route or path.startswith(route + "/"):
            return route
    return OTHER_ROUTE


def status_label(status: int) -> str:
    """The HTTP status as a label; "0" when no response was started (the client went away)."""
    return str(status) if 100 <= status <= 599 else "0"


def code_label(code: str | None) -> str:
    """An error code as a label: one of errors.py's codes, anything else INTERNAL."""
    if code is None:
        return "OK"
    return code if code in _known_codes() else Internal.code


def _known_codes() -> set[str]:
    codes, todo = set(), [MemhubError]
    while todo:
        cls = todo.pop()
        codes.add(cls.code)
        todo.extend(cls.__subclasses__())
    return codes


class QueueReading:
    """The embedding queue's gauges, read through the backend at most once per `max_age`
    seconds, however many scrapes ask at once (they wait for the one read in flight)."""

    def __init__(self, max_age: float = QUEUE_CACHE_SECONDS) -> None:
        self.max_age = max_age
        self.value: dict[str, Any] | None = None
        self.reads = 0
        self._at: float | None = None
        self._lock = asyncio.Lock()

    def _fresh(self) -> bool:
        return self._at is not None and time.monotonic() - self._at < self.max_age

    async def get(self, backend: StorageBackend) -> dict[str, Any] | None:
        if self._fresh():
            return self.value
        async with self._lock:
            if self._fresh():
                return self.value
            self.reads += 1
            try:
                self.value = await backend.embedding_queue_state()
            except MemhubError as err:
                # Left out of this scrape rather than shown stale; /healthz says why. A failed
                # read is cached too, so a database that is down is not asked at every scrape.
                logger.debug("embedding queue not read for /metrics", extra={"code": err.code})
                self.value = None
            self._at = time.monotonic()
            return self.value


class _Sampled:
    """A prometheus_client collector rendering what `Metrics.sample` last read."""

    def __init__(self) -> None:
        self.pool: dict[str, int] | None = None
        self.queue: dict[str, Any] | None = None
        self.worker: dict[str, Any] | None = None

    def collect(self) -> Iterator[Metric]:
        if self.pool is not None:
            yield from _pool_metrics(self.pool)
        if self.queue is not None:
            yield from _queue_metrics(self.queue)
        if self.worker is not None:
            jobs = CounterMetricFamily("memhub_embedding_jobs", "Embedding jobs this process "
                                       "finished, by result.", labels=["result"])
            for result in ("embedded", "skipped", "failed", "dead"):
                jobs.add_metric([result], self.worker.get(result, 0))
            yield jobs


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def _pool_metrics(stats: dict[str, int]) -> Iterator[Metric]:
    """psycopg_pool's `get_stats()`: gauges of now, and counters since the pool opened (nothing
    calls `pop_stats`, which would reset them)."""
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    yield _gauge("memhub_pool_size", "Connections open or being opened.", size)
    yield _gauge("memhub_pool_idle", "Connections idle in the pool, ready for a request.", idle)
    yield _gauge("memhub_pool_in_use", "Connections checked out (or being opened).",
                 max(size - idle, 0))
    yield _gauge("memhub_pool_waiting", "Requests waiting for a connection.",
                 stats.get("requests_waiting", 0))
    yield _gauge("memhub_pool_max", "The pool's maximum size (MEMHUB_POOL_MAX_SIZE).",
                 stats.get("pool_max", 0))
    yield _counter("memhub_pool_requests", "Connection requests made to the pool.",
                   stats.get("requests_num", 0))
    yield _counter("memhub_pool_requests_queued", "Connection requests that had to wait.",
                   stats.get("requests_queued", 0))
    yield _counter("memhub_pool_request_errors", "Connection requests that failed (timeout).",
                   stats.get("requests_errors", 0))
    yield _counter("memhub_pool_wait_seconds", "Time requests spent waiting for a connection.",
                   stats.get("requests_wait_ms", 0) / 1000)
    yield _counter("memhub_pool_connection_errors", "Failed attempts to open a connection.",
                   stats.get("connections_errors", 0))
    yield _counter("memhub_pool_connections_lost", "Connections found broken and replaced.",
                   stats.get("connections_lost", 0))


def _queue_metrics(queue: dict[str, Any]) -> Iterator[Metric]:
    yield _gauge("memhub_embedding_queue_pending", "Embedding jobs waiting (capped at "
                 f"{queue['cap']}).", queue["pending"])
    yield _gauge("memhub_embedding_queue_due", "Embedding jobs due now (capped at "
                 f"{queue['cap']}).", queue["due"])
    yield _gauge("memhub_embedding_queue_oldest_due_seconds", "How long the oldest due "
                 "embedding job has been due (0 when none is).", queue["oldest_due_seconds"])


class Metrics:
    """Everything /metrics shows, in this app's own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.tool_calls = Counter("memhub_tool_calls", "MCP tool calls, by tool, outcome "
                                  "(ok, error) and error code (OK when none).",
                                  ["tool", "outcome", "code"], registry=r)
        self.tool_duration = Histogram("memhub_tool_duration_seconds", "MCP tool call "
                                       "latency, as the server measures it.", ["tool"],
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.http_requests = Counter("memhub_http_requests", "HTTP requests, by route and "
                                     "status.", ["route", "status"], registry=r)
        self.http_duration = Histogram("memhub_http_request_duration_seconds", "HTTP request "
                                       "latency, by route.", ["route"], buckets=LATENCY_BUCKETS,
                                       registry=r)
        self.job_runs = Counter("memhub_job_runs", "Background job runs, by job.", ["job"],
                                registry=r)
        self.job_failures = Counter("memhub_job_failures", "Background job runs that failed.",
                                    ["job"], registry=r)
        self.job_last_success = Gauge("memhub_job_last_success_timestamp_seconds", "When the "
                                      "job last ran without an error (Unix time).", ["job"],
                                      registry=r)
        self.auth_refusals = Counter("memhub_auth_refusals", "Requests the token gate "
                                     "refused, by reason.", ["reason"], registry=r)
        self.activity_dropped = Counter("memhub_activity_dropped", "Activity-log rows "
                                        "dropped: overflow (the buffer was full), write_failed "
                                        "(the database refused the batch).", ["reason"],
                                        registry=r)
        self.limit_refusals = Counter("memhub_limit_refusals", "Requests refused by a "
                                      "token's limits or a namespace's quota, by reason.",
                                      ["reason"], registry=r)
        # Series that exist before their first event read as 0, not as absent.
        for job in JOBS:
            self.job_runs.labels(job)
            self.job_failures.labels(job)
        for reason in REFUSALS:
            self.auth_refusals.labels(reason)
        for reason in DROPPED_REASONS:
            self.activity_dropped.labels(reason)
        for reason in LIMIT_REFUSALS:
            self.limit_refusals.labels(reason)
        self.queue = QueueReading()
        self._sampled = _Sampled()
        r.register(self._sampled)

    # --- written by the gateway, the MCP middleware and the jobs ---------------------------
    def tool_call(self, tool: str, code: str | None, seconds: float) -> None:
        """One finished tools/call: `tool` already bounded, `code` None when it succeeded."""
        outcome = "ok" if code is None else "error"
        self.tool_calls.labels(tool, outcome, code_label(code)).inc()
        self.tool_duration.labels(tool).observe(seconds)

    def activity_rows_dropped(self, reason: str, rows: int) -> None:
        """Rows the activity log lost (storage/activity.py): `reason` one of
        DROPPED_REASONS."""
        self.activity_dropped.labels(reason).inc(rows)

    def observe_http(self, path: str, status: int, seconds: float) -> None:
        route = route_label(path)
        self.http_requests.labels(route, status_label(status)).inc()
        self.http_duration.labels(route).observe(seconds)

    def auth_refused(self, reason: str) -> None:
        if reason not in REFUSALS:
            raise ValueError(f"unknown refusal reason {reason!r}; add it to REFUSALS")
        self.auth_refusals.labels(reason).inc()

    def limit_refused(self, reason: str) -> None:
        if reason not in LIMIT_REFUSALS:
            raise ValueError(f"unknown limit {reason!r}; add it to LIMIT_REFUSALS")
        self.limit_refusals.labels(reason).inc()

    def record_job_run(self, job: str, ok: bool) -> None:
        """Count one run of a background job (`JOBS`); `ok` False when it failed."""
        if job not in JOBS:
            raise ValueError(f"unknown job {job!r}; add it to memhub.metrics.JOBS")
        self.job_runs.labels(job).inc()
        if ok:
            self.job_last_success.labels(job).set_to_current_time()
        else:
            self.job_failures.labels(job).inc()

    def job_recorder(self, job: str) -> Callable[[bool], None]:
        """`record_job_run` bound to one job, for a loop that must not import this module
        (storage/): it calls `record(ok)` after each run. Checks the name now, at wiring."""
        if job not in JOBS:
            raise ValueError(f"unknown job {job!r}; add it to memhub.metrics.JOBS")
        return lambda ok: self.record_job_run(job, ok)

    # --- read at scrape time ---------------------------------------------------------------
    async def sample(self, backend: StorageBackend | None,
                     worker: EmbeddingWorker | None) -> None:
        """Read the pool (in memory), the embedding queue (one capped query, cached) and the
        worker's totals for the next `render`. Nothing while the backend is not open."""
        self._sampled.pool = backend.pool_stats() if backend is not None else None
        self._sampled.queue = await self.queue.get(backend) if backend is not None else None
        self._sampled.worker = dict(worker.totals) if worker is not None else None

    def render(self) -> bytes:
        """The Prometheus text exposition of this registry."""
        return generate_latest(self.registry)
