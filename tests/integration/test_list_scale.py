"""memory_list at scale, with many projects in one database: a namespace is listed newest
first from its own rows (migration 0015). With seq unique across the table, the planner walked
every namespace's memories from the newest and skipped the others' rows, so a project written
before a larger one read all of the larger one on every listing (71 ms for 10k memories beside
100k; docs/performance.md)."""

from __future__ import annotations

import json

import pytest

from memhub.storage.postgres.queries import q
from tests.support.plans import explain_as_app, rows_read
from tests.support.retrieval import bulk_insert_memories

OLD, NEW = "list-old", "list-new"
OLD_SIZE = 1000


@pytest.mark.parametrize(("statement", "extra"), [
    ("memories.list_live", {}),
    ("memories.list_live", {"kind": "FACT"}),
    ("memories.list_by_status", {"status": None}),            # ALL
    ("memories.list_by_status", {"status": "SUPERSEDED"}),
])
def test_a_namespace_written_before_a_larger_one_lists_from_its_own_rows(db_conn, db_dsn,
                                                                         statement, extra):
    bulk_insert_memories(db_conn, OLD, OLD_SIZE)       # written first: the lower seq values
    bulk_insert_memories(db_conn, NEW, 10 * OLD_SIZE)
    db_conn.execute("ANALYZE memories")
    params = {"namespace": OLD, "kind": None, "tag": None, "include_quarantined": False,
              "after_seq": None, "limit": 20, "key_prefix": None, **extra}
    plan = explain_as_app(db_dsn, OLD, q(statement), params)   # as the server reads
    assert rows_read(plan) <= OLD_SIZE, json.dumps(plan, indent=1)   # never the other's rows


@pytest.mark.parametrize(("statement", "extra"), [
    ("memories.list_live", {}),
    ("memories.list_by_status", {"status": None}),            # ALL
])
def test_a_listing_by_a_rare_key_prefix_reads_only_the_memories_under_it(db_conn, db_dsn,
                                                                         statement, extra):
    # One memory in 1,000 under "rare/", the rest under "coord/".
    bulk_insert_memories(db_conn, OLD, 10 * OLD_SIZE,
                         keys=lambda i: f"rare/{i}" if i % 1000 == 0 else f"coord/{i}")
    db_conn.execute("ANALYZE memories")
    params = {"namespace": OLD, "kind": None, "tag": None, "include_quarantined": False,
              "after_seq": None, "limit": 20, "key_prefix": "rare/", **extra}
    plan = explain_as_app(db_dsn, OLD, q(statement), params)
    assert plan["Actual Rows"] == 10
    assert rows_read(plan) <= 10, json.dumps(plan, indent=1)   # the range, never the namespace
