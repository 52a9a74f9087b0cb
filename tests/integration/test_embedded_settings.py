"""The embedded cluster is started sized for memhub (storage/embedded.py): enough connections
for the pools of two servers, and shared buffers that hold a large namespace's HNSW index
(docs/perf.md). A server given DATABASE_URL is used as configured, so there is nothing to check
then."""

from __future__ import annotations

import os

import psycopg
import pytest

from storage.embedded import _MIN_MAX_CONNECTIONS, _shared_buffers_mb

pytestmark = pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")),
                                reason="DATABASE_URL: not the embedded cluster")


def test_the_embedded_cluster_starts_with_memhubs_settings(admin_dsn):
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        buffers_mb = conn.execute(
            "SELECT setting::bigint * 8192 / 1048576 FROM pg_settings"
            " WHERE name = 'shared_buffers'").fetchone()[0]
        connections = int(conn.execute("SHOW max_connections").fetchone()[0])
    assert buffers_mb == _shared_buffers_mb()
    assert connections >= _MIN_MAX_CONNECTIONS
