"""Every memhub backend terminated every 2 s, for 25 s, while MCP clients read and write.

The pool has grown to its full size beforehand (pool_min_size = pool_max_size), as after a busy
hour: after each kill every idle pooled connection is dead at once. One client calls tools
back to back (a mix of memory_search, memory_get, memory_list and memory_remember with a
client_request_id). Reads and keyed writes are safe to repeat, so they must ride through;
/healthz must keep answering.
The driver (clients, killer, health poller, write ledger) is bench/backend_terminations.py,
which measures the same thing against a memhub process.
"""

from __future__ import annotations

import pytest

from bench.backend_terminations import duplicates, longest_health_gap, report, run_fault, seed
from tests.conftest import WEB_TOKEN, make_settings
from tests.support.server import thread_server

NS = "fault"
pytestmark = pytest.mark.slow


async def test_reads_and_keyed_writes_ride_through_backends_terminated_every_two_seconds(
    db_dsn, tmp_path
):
    settings = make_settings(db_dsn, tmp_path, pool_min_size=10, pool_max_size=10)
    with thread_server(settings) as running:
        ids = await seed(running.base_url, WEB_TOKEN, NS)
        out = await run_fault(running.base_url, WEB_TOKEN, db_dsn, namespace=NS, seconds=25,
                              interval=2.0, clients=1, ids=ids)
        figures = report(out, db_dsn, NS)
    assert out.kill_rounds >= 10 and out.killed >= out.kill_rounds, figures
    assert figures["success_rate"] >= 0.95, figures
    assert figures["calls"] >= 100, figures
    # A dead pooled connection is replaced at once, not after the pool's backoff (1 s, 2 s...).
    assert figures["latency_ms"]["p95"] < 1000, figures
    assert out.acked, figures
    # Every acknowledged keyed write is stored exactly once, as answered; none twice.
    assert duplicates(db_dsn, NS, out) == {}, figures
    assert longest_health_gap(out) <= 5.0, figures
