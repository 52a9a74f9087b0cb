#!/usr/bin/env python3
"""What `memhub-admin export` and `import` cost for a namespace of N memories.

    .venv/bin/python -m bench.transfer [--memories 20000] [--events 20000]

An embedded PostgreSQL of its own (a temporary directory), two databases migrated from
scratch. The source namespace is built straight in the tables as the owner: N memories of
about 200 characters with their revision, one session holding the events. Then, timed: the
export; the import into the other database (one transaction, embeddings queued); a second
import of the same file (every record compared, nothing written); an export of the imported
namespace, checked byte for byte against the first.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from bench.common import default_out, machine, provenance, write_result
from memhub.admin import export, import_
from memhub.config import Settings
from memhub.storage.postgres.embedded import EmbeddedPostgres
from memhub.storage.postgres.migrate import apply_migrations

NS = "bench"


def build(dsn: str, memories: int, events: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        conn.execute(
            "INSERT INTO memories (namespace, kind, title, content, tags, content_hash,"
            " author_client) SELECT %(ns)s, 'NOTE', 'note ' || i,"
            " 'ledger entry ' || i || ': ' || repeat('amounts are integers in minor units ', 5),"
            " ARRAY['bench'], sha256(convert_to(%(ns)s || i, 'UTF8')), 'bench'"
            " FROM generate_series(1, %(n)s) AS i", {"ns": NS, "n": memories})
        conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, title, content, tags,"
            " author_client) SELECT id, namespace, 1, title, content, tags, author_client"
            " FROM memories WHERE namespace = %s", [NS])
        session = conn.execute(
            "INSERT INTO sessions (namespace, title, author_client, next_seq)"
            " VALUES (%s, 'bench', 'bench', %s) RETURNING id", [NS, events]).fetchone()[0]
        conn.execute(
            "INSERT INTO session_events (namespace, session_id, seq, type, payload, request_hash,"
            " author_client) SELECT %s, %s, i, 'step', jsonb_build_object('i', i, 'note',"
            " 'step ' || i), sha256(int4send(i)), 'bench' FROM generate_series(1, %s) AS i",
            [NS, session, events])


async def measure(memories: int, events: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="memhub-bench-transfer-") as tmp:
        cluster = EmbeddedPostgres(Path(tmp) / "pg")
        admin = cluster.start()
        try:
            dsns = []
            for name in ("source", "target"):
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {name}")
                dsns.append(make_conninfo(admin, dbname=name))
                apply_migrations(dsns[-1])
            source, target = dsns
            build(source, memories, events)
            settings = Settings(database_url=target, data_dir=Path(tmp) / "data")
            first, second = Path(tmp) / "first.jsonl", Path(tmp) / "second.jsonl"
            timings = {}
            started = time.perf_counter()
            report = await export.run(source, NS, str(first), force=True, progress=False)
            timings["export_s"] = round(time.perf_counter() - started, 2)
            started = time.perf_counter()
            imported = await import_.run(target, settings, str(first), namespace=None,
                                         progress=False)
            timings["import_s"] = round(time.perf_counter() - started, 2)
            started = time.perf_counter()
            again = await import_.run(target, settings, str(first), namespace=None,
                                      progress=False)
            timings["second_import_s"] = round(time.perf_counter() - started, 2)
            await export.run(target, NS, str(second), force=True, progress=False)
            assert sum(again["created"].values()) == 0
            return {
                "memories": memories, "events": events, "file_bytes": report["bytes"],
                **timings, "embeddings_queued": imported["embeddings_queued"],
                "round_trip_identical": first.read_bytes() == second.read_bytes(),
            }
        finally:
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = asyncio.run(measure(args.memories, args.events))
    report = {"what": "memhub-admin export/import of one namespace", **provenance(),
              "machine": machine(), "result": result}
    path = write_result(args.out or default_out("transfer"), report)
    print(result)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
