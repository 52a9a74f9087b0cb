"""A fresh embedded cluster starts sized for memhub (storage/postgres/embedded.py): enough
connections for the pools of two servers, and shared buffers that hold a large namespace's HNSW
index (docs/performance.md). The test starts its own cluster, so it runs whatever
DATABASE_URL the rest of the suite uses."""

from __future__ import annotations

import psycopg

from memhub.storage.postgres.embedded import (
    _MIN_MAX_CONNECTIONS,
    EmbeddedPostgres,
    _shared_buffers_mb,
)


def test_a_fresh_embedded_cluster_starts_with_memhubs_settings(tmp_path):
    cluster = EmbeddedPostgres(tmp_path)
    dsn = cluster.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            buffers_mb = conn.execute(
                "SELECT setting::bigint * 8192 / 1048576 FROM pg_settings"
                " WHERE name = 'shared_buffers'").fetchone()[0]
            connections = int(conn.execute("SHOW max_connections").fetchone()[0])
    finally:
        cluster.stop()
    assert buffers_mb == _shared_buffers_mb()
    assert connections >= _MIN_MAX_CONNECTIONS
