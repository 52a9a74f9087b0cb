"""Transparent reconnect: reads and idempotent writes survive a backend terminated mid-call;
a write without an idempotency key surfaces RETRYABLE and is never replayed.

The server's query is made to wait on a table lock held by the test (so the backend is
caught *during* the statement), the backend is terminated from the test's connection, and
the lock is released. No sleeps: every wait polls a condition with a bound.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from tests.support.mcp import call, error_of

NS = "acme"


def _blocked_backend(conn: psycopg.Connection, timeout: float = 20.0) -> int:
    """pid of the server backend waiting on our lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' LIMIT 1").fetchone()
        if row:
            return row[0]
        time.sleep(0.01)
    raise TimeoutError("the server's statement never blocked on the lock")


async def _terminate_during(db_dsn: str, table: str, coro):
    """Run `coro` (a tool call) while its statement on `table` is blocked, kill that backend,
    then release the lock; return the call's result (or exception) and the killed pid."""
    locker = psycopg.connect(db_dsn, autocommit=False)
    try:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        task = asyncio.create_task(coro)
        pid = await asyncio.to_thread(_blocked_backend, locker)
        with psycopg.connect(db_dsn, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", [pid])
        locker.rollback()
        result = await asyncio.gather(task, return_exceptions=True)
        return result[0], pid
    finally:
        locker.close()


async def test_a_read_whose_connection_dies_mid_query_is_retried_and_succeeds(
    server, tokens, db_dsn
):
    async with server.client(tokens["web"]) as web:
        saved = await call(web, "handoff_save", {"namespace": NS, "title": "t", "body": "b"})
        result, _ = await _terminate_during(
            db_dsn, "handoffs", call(web, "handoff_list", {"namespace": NS}))
    assert not isinstance(result, BaseException), result
    assert [h["id"] for h in result["handoffs"]] == [saved["handoff"]["id"]]


async def test_a_keyed_write_whose_connection_dies_is_retried_once_and_written_once(
    server, tokens, db_dsn, db_conn
):
    async with server.client(tokens["web"]) as web:
        result, _ = await _terminate_during(db_dsn, "handoffs", call(web, "handoff_save", {
            "namespace": NS, "title": "t", "body": "b", "client_request_id": "k1"}))
    assert not isinstance(result, BaseException), result
    assert result["outcome"] == "created"
    assert db_conn.execute("SELECT count(*) FROM handoffs").fetchone()[0] == 1


async def test_an_append_with_an_event_id_survives_a_dropped_connection(
    server, tokens, db_dsn, db_conn
):
    async with server.client(tokens["web"]) as web:
        sid = (await call(web, "session_create", {"namespace": NS, "title": "s"}))[
            "session"]["id"]
        result, _ = await _terminate_during(db_dsn, "session_events", call(
            web, "session_append_event", {"namespace": NS, "session_id": sid, "type": "step",
                                          "payload": {}, "event_id": "e1"}))
    assert not isinstance(result, BaseException), result
    assert result["event"]["seq"] == 1
    assert db_conn.execute("SELECT count(*) FROM session_events").fetchone()[0] == 1


async def test_a_write_without_a_key_is_not_replayed_after_a_dropped_connection(
    server, tokens, db_dsn, db_conn
):
    async with server.client(tokens["web"]) as web:
        sid = (await call(web, "session_create", {"namespace": NS, "title": "s"}))[
            "session"]["id"]
        save, _ = await _terminate_during(db_dsn, "handoffs", error_of(
            web, "handoff_save", {"namespace": NS, "title": "t", "body": "b"}))
        append, _ = await _terminate_during(db_dsn, "session_events", error_of(
            web, "session_append_event", {"namespace": NS, "session_id": sid, "type": "step",
                                          "payload": {}}))
    assert save["code"] in ("RETRYABLE", "UNKNOWN_OUTCOME")
    assert append["code"] in ("RETRYABLE", "UNKNOWN_OUTCOME")
    assert db_conn.execute("SELECT count(*) FROM handoffs").fetchone()[0] == 0
    assert db_conn.execute("SELECT count(*) FROM session_events").fetchone()[0] == 0
    assert db_conn.execute("SELECT next_seq FROM sessions").fetchone()[0] == 0


async def test_calls_after_every_idle_pooled_connection_was_terminated_succeed(
    server, tokens, db_conn
):
    async with server.client(tokens["web"]) as web:
        await call(web, "handoff_save", {"namespace": NS, "title": "t", "body": "b"})
        killed = db_conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND state = 'idle'").fetchone()[0]
        listed = await call(web, "handoff_list", {"namespace": NS})
        saved = await call(web, "handoff_save", {"namespace": NS, "title": "t2", "body": "b"})
    assert killed >= 1
    assert len(listed["handoffs"]) == 1 and saved["outcome"] == "created"
