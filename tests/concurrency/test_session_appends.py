"""Concurrent appends to one session keep a gap-free order assigned by the database."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import make_settings
from tests.support.mcp import call

NS = "acme"
N = 40


@pytest.fixture
def settings(db_dsn, tmp_path):
    # Forty clients of three tokens at once: the database's order is under test here, not the
    # tokens' in-flight limit (docs/operations.md#per-token-and-per-namespace).
    return make_settings(db_dsn, tmp_path, token_max_in_flight=100)


async def test_forty_concurrent_appends_get_seq_one_to_forty_without_gaps(server, tokens,
                                                                         db_conn):
    async with server.client(tokens["web"]) as web:
        sid = (await call(web, "session_create", {"namespace": NS, "title": "race"}))[
            "session"]["id"]
    surfaces = ["web", "cursor", "desktop-cli"]

    async def append(i: int) -> int:
        async with server.client(tokens[surfaces[i % 3]]) as c:
            got = await call(c, "session_append_event", {
                "namespace": NS, "session_id": sid, "type": "step", "payload": {"i": i},
                "event_id": f"e{i}"})
            return got["event"]["seq"]

    seqs = await asyncio.gather(*(append(i) for i in range(N)))
    assert sorted(seqs) == list(range(1, N + 1))
    rows = db_conn.execute(
        "SELECT seq, payload->>'i' FROM session_events WHERE session_id = %s ORDER BY seq",
        [sid]).fetchall()
    assert [r[0] for r in rows] == list(range(1, N + 1))
    assert sorted(int(r[1]) for r in rows) == list(range(N))
    assert db_conn.execute("SELECT next_seq FROM sessions WHERE id = %s",
                           [sid]).fetchone()[0] == N


async def test_concurrent_replays_of_one_event_id_append_it_once(server, tokens, db_conn):
    async with server.client(tokens["web"]) as web:
        sid = (await call(web, "session_create", {"namespace": NS, "title": "dup"}))[
            "session"]["id"]

    async def append() -> dict:
        async with server.client(tokens["web"]) as c:
            return await call(c, "session_append_event", {
                "namespace": NS, "session_id": sid, "type": "step", "payload": {"x": 1},
                "event_id": "same"})

    results = await asyncio.gather(*(append() for _ in range(8)))
    assert {r["event"]["seq"] for r in results} == {1}
    assert sorted(r["outcome"] for r in results).count("appended") == 1
    assert db_conn.execute("SELECT count(*) FROM session_events").fetchone()[0] == 1
