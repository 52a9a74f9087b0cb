"""Garbage collection (migration 0024): what is older than its setting goes, what is younger
stays, a dry run removes nothing, one run at a time across processes, and the server's own
loop runs without anyone asking."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import psycopg
import pytest

from memhub.storage.retention import RetentionPolicy
from tests.conftest import WEB_TOKEN, make_settings
from tests.integration.test_admin_cli import cli, ok_json
from tests.support.db import insert_token
from tests.support.mcp import call
from tests.support.memories import open_backend
from tests.support.server import thread_server

DAY = 86400
POLICY = RetentionPolicy(idempotency_ttl_seconds=7 * DAY, dead_job_ttl_seconds=30 * DAY,
                         artifact_grace_seconds=DAY)


def add_key(conn: psycopg.Connection, age_seconds: float, namespace: str = "acme") -> str:
    request_id = f"r-{uuid.uuid4().hex[:8]}"
    conn.execute(
        "INSERT INTO idempotency_keys (namespace, token_id, surface, request_id, operation,"
        " request_hash, response, created_at) VALUES (%s, 1, 'web', %s, 'remember', '\\x01',"
        " '{}', now() - make_interval(secs => %s))", [namespace, request_id, age_seconds])
    return request_id


def keys(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT request_id FROM idempotency_keys")}


@pytest.fixture
def owner(db_conn):
    """The owner's connection, seeing every namespace (forced row-level security)."""
    db_conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
    return db_conn


async def test_gc_removes_idempotency_answers_older_than_the_ttl_and_never_younger_ones(
    db_dsn, owner, tmp_path
):
    old = add_key(owner, 7 * DAY + 60)
    young = [add_key(owner, age) for age in (0, 3600, 7 * DAY - 60)]
    async with open_backend(db_dsn, tmp_path) as backend:
        report = await backend.collect_garbage(POLICY)
    assert report["ran"] and report["removed"]["idempotency_keys"] == 1
    assert keys(owner) == set(young) and old not in keys(owner)


async def test_gc_removes_jobs_dead_for_longer_than_the_ttl_but_no_pending_job(
    db_dsn, owner, tmp_path
):
    owner.execute("SET session_replication_role = replica")  # jobs without their memories
    for status, age in (("dead", 31 * DAY), ("dead", 29 * DAY), ("pending", 365 * DAY)):
        owner.execute("INSERT INTO embedding_jobs (namespace, memory_id, revision, status,"
                      " run_after) VALUES ('acme', gen_random_uuid(), 1, %s,"
                      " now() - make_interval(secs => %s))", [status, age])
    async with open_backend(db_dsn, tmp_path) as backend:
        report = await backend.collect_garbage(POLICY)
    assert report["removed"]["dead_embedding_jobs"] == 1
    left = owner.execute("SELECT status, round(extract(epoch FROM now() - run_after) / 86400)"
                         " FROM embedding_jobs ORDER BY 1, 2").fetchall()
    assert left == [("dead", 29), ("pending", 365)]


def add_blob(conn: psycopg.Connection, age_seconds: float, *, referenced: bool) -> bytes:
    sha = uuid.uuid4().bytes * 2
    conn.execute("INSERT INTO artifact_blobs (sha256, size, chunk_size, complete, created_at)"
                 " VALUES (%s, 3, 1048576, true, now() - make_interval(secs => %s))",
                 [sha, age_seconds])
    conn.execute("INSERT INTO artifact_chunks (sha256, idx, data) VALUES (%s, 0, 'abc')", [sha])
    if referenced:
        conn.execute("INSERT INTO artifacts (namespace, sha256, name, media_type, size,"
                     " author_client) VALUES ('acme', %s, 'a.txt', 'text/plain', 3, 'web')",
                     [sha])
    return sha


async def test_gc_removes_unreferenced_artifact_bytes_only_after_the_grace_period(
    db_dsn, owner, tmp_path
):
    orphan = add_blob(owner, DAY + 60, referenced=False)
    fresh_orphan = add_blob(owner, 60, referenced=False)
    held = add_blob(owner, 30 * DAY, referenced=True)
    async with open_backend(db_dsn, tmp_path) as backend:
        report = await backend.collect_garbage(POLICY)
    assert report["removed"]["artifact_blobs"] == 1
    blobs = {bytes(r[0]) for r in owner.execute("SELECT sha256 FROM artifact_blobs")}
    chunks = {bytes(r[0]) for r in owner.execute("SELECT sha256 FROM artifact_chunks")}
    assert blobs == chunks == {fresh_orphan, held} and orphan not in blobs


async def test_gc_removes_expired_admin_rows_and_forgiven_login_failures(db_dsn, owner,
                                                                         tmp_path):
    for expiry in ("now() - interval '1 minute'", "now() + interval '1 hour'"):
        owner.execute("INSERT INTO admin_ended_sessions (sid_hash, expires_at)"
                      f" VALUES (%s, {expiry})", [uuid.uuid4().bytes * 2])
        owner.execute("INSERT INTO admin_flash (id_hash, sid_hash, pad, detail, expires_at)"
                      f" VALUES (%s, %s, '\\x01', '{{}}', {expiry})",
                      [uuid.uuid4().bytes * 2, uuid.uuid4().bytes * 2])
    owner.execute("INSERT INTO admin_login_failures (source, failures, last_at, locked_until)"
                  " VALUES ('forgiven', 5, now() - interval '2 hours', NULL),"
                  "        ('recent', 5, now() - interval '10 minutes', NULL),"
                  "        ('locked', 9, now() - interval '2 hours', now() + interval '1 hour')")
    async with open_backend(db_dsn, tmp_path) as backend:
        removed = (await backend.collect_garbage(POLICY))["removed"]
    assert (removed["admin_ended_sessions"], removed["admin_flash"],
            removed["admin_login_failures"]) == (1, 1, 1)
    sources = {r[0] for r in owner.execute("SELECT source FROM admin_login_failures")}
    assert sources == {"recent", "locked"}


async def test_a_dry_run_counts_what_would_go_and_removes_nothing(db_dsn, owner, tmp_path):
    for _ in range(3):
        add_key(owner, 8 * DAY)
    add_blob(owner, 2 * DAY, referenced=False)
    before = keys(owner)
    async with open_backend(db_dsn, tmp_path) as backend:
        report = await backend.collect_garbage(POLICY, dry_run=True)
    assert report["dry_run"] and report["removed"]["idempotency_keys"] == 3
    assert report["removed"]["artifact_blobs"] == 1
    assert keys(owner) == before
    assert owner.execute("SELECT count(*) FROM artifact_blobs").fetchone() == (1,)
    assert owner.execute("SELECT count(*) FROM gc_runs").fetchone() == (0,)


async def test_a_run_removes_at_most_a_batch_of_each_kind_and_says_more_remains(
    db_dsn, owner, tmp_path
):
    for _ in range(5):
        add_key(owner, 8 * DAY)
    small = RetentionPolicy(7 * DAY, 30 * DAY, DAY, batch=2)
    async with open_backend(db_dsn, tmp_path) as backend:
        first = await backend.collect_garbage(small)
        assert (first["removed"]["idempotency_keys"], first["more"]) == (2, True)
        assert len(keys(owner)) == 3


async def test_only_one_collection_runs_at_a_time_the_other_skips(db_dsn, owner, tmp_path):
    add_key(owner, 8 * DAY)
    with psycopg.connect(db_dsn) as first:  # a run in progress: its transaction is open
        first.execute("SELECT memhub_gc(false, interval '7 days', interval '30 days',"
                      " interval '1 day', interval '1 hour', 1000, 'first', NULL,"
                      " interval '30 days')")
        async with open_backend(db_dsn, tmp_path) as backend:
            second = await asyncio.wait_for(backend.collect_garbage(POLICY), timeout=10)
            assert second == {"ran": False, "reason": "busy"}
            first.commit()
            assert (await backend.collect_garbage(POLICY))["ran"] is True
    runs = owner.execute("SELECT trigger FROM gc_runs ORDER BY id").fetchall()
    assert runs == [("first",), ("scheduled",)]


async def test_a_scheduled_run_skips_when_another_process_ran_one_recently(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as backend:
        assert (await backend.collect_garbage(POLICY))["ran"] is True
        again = await backend.collect_garbage(POLICY, min_gap_seconds=1800)
        assert (again["ran"], again["reason"]) == (False, "recent")
        assert (await backend.last_gc_run())["trigger"] == "scheduled"


async def test_the_server_collects_on_its_own_and_stats_shows_when(db_dsn, owner, tmp_path):
    old = add_key(owner, 8 * DAY)
    scoped = insert_token(db_dsn, "cursor", namespaces=["acme"])
    settings = make_settings(db_dsn, tmp_path, gc_interval_seconds=0.2)
    with thread_server(settings) as server:
        deadline = time.monotonic() + 30
        while old in keys(owner):
            assert time.monotonic() < deadline, "the background collection never ran"
            await asyncio.sleep(0.05)
        async with server.client(WEB_TOKEN) as web, server.client(scoped) as tenant:
            everything = (await call(web, "stats", {}))["gc"]
            mine = (await call(tenant, "stats", {}))["gc"]
    assert everything["trigger"] == "scheduled" and everything["last_run_at"]
    assert "idempotency_keys" in everything["removed"]
    assert set(mine) == {"last_run_at"} and mine["last_run_at"]


def test_memhub_admin_gc_dry_run_then_gc_and_the_audit(db_dsn, owner):
    add_key(owner, 8 * DAY)
    dry = ok_json(cli(db_dsn, "gc", "--dry-run", "--json"))
    assert dry["would_remove"]["idempotency_keys"] == 1 and len(keys(owner)) == 1
    done = ok_json(cli(db_dsn, "gc", "--json"))
    assert done["removed"]["idempotency_keys"] == 1 and keys(owner) == set()
    (detail,) = owner.execute("SELECT detail FROM admin_audit WHERE action = 'gc.run'"
                              ).fetchone()
    assert detail["removed"]["idempotency_keys"] == 1
    trigger = owner.execute("SELECT trigger FROM gc_runs").fetchone()[0]
    assert trigger.startswith("cli:")


def test_memhub_admin_gc_while_another_run_holds_the_lock_exits_1_conflict(db_dsn):
    with psycopg.connect(db_dsn) as first:
        first.execute("SELECT pg_advisory_xact_lock(hashtext('memhub_gc'))")
        result = cli(db_dsn, "gc", "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "CONFLICT"
