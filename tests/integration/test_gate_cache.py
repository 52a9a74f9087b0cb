"""The intent gate's cache on two backends over one database (two runtimes): without a
listener only the TTL bounds staleness; with one a change elsewhere drops the entry at once."""

from __future__ import annotations

from tests.support.memories import DESKTOP, NS, open_backend
from tests.support.wait import until

RULE = {"contains": [{"var": "text"}, "deploy"]}


async def guidance(backend) -> list[str]:
    opened = await backend.intent_open(DESKTOP, NS, {"text": "deploy now"})
    return [g["skill"] for g in opened["guidance"]]


async def test_without_a_listener_a_cached_entry_lives_until_its_ttl(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, gate_cache_ttl_seconds=1.0) as reader, \
            open_backend(db_dsn, tmp_path) as writer:
        reader.listen_dsn = None  # as behind a transaction pooler without a direct URL
        assert await guidance(reader) == []
        await writer.skill_define(DESKTOP, NS, "deploys", RULE, "Check the dashboard.")
        assert await guidance(reader) == []  # still the cached skills: no NOTIFY reached it
        status = await reader.gate_cache_status(DESKTOP, NS)
        assert status["cached"] and not status["listening"] and status["ttl_seconds"] == 1.0

        async def reloaded() -> bool:
            return await guidance(reader) == ["deploys"]
        await until(reloaded)


async def test_with_a_listener_a_change_elsewhere_drops_the_entry(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path, gate_cache_ttl_seconds=3600.0) as reader, \
            open_backend(db_dsn, tmp_path) as writer:

        async def listening() -> bool:
            return (await reader.gate_cache_status(DESKTOP, NS))["listening"]
        await until(listening)
        assert await guidance(reader) == []
        await writer.skill_define(DESKTOP, NS, "deploys", RULE, "Check the dashboard.")

        async def dropped() -> bool:
            return not (await reader.gate_cache_status(DESKTOP, NS))["cached"]
        await until(dropped)
        assert await guidance(reader) == ["deploys"]
        assert (await reader.gate_cache_status(DESKTOP, NS))["invalidations"] >= 1


async def test_a_namespace_purge_removes_the_gates_rows(db_dsn, tmp_path, db_conn):
    async with open_backend(db_dsn, tmp_path) as backend:
        await backend.skill_define(DESKTOP, NS, "deploys", RULE, "Check the dashboard.")
        opened = await backend.intent_open(DESKTOP, NS, {"text": "deploy now"})
        await backend.gate_close_outcome(DESKTOP, NS, opened["intent_id"], "done")
    db_conn.execute("INSERT INTO gate_nonces (namespace, nonce) VALUES (%s, %s)",
                    [NS, "n" * 32])
    tables = ("gate_skills", "gate_intents", "gate_nonces")
    count = "SELECT count(*) FROM {} WHERE namespace = %s"
    assert all(db_conn.execute(count.format(t), [NS]).fetchone()[0] == 1 for t in tables)
    db_conn.execute("SELECT memhub_purge_namespace(%s, 'test', 'tester', 'cli')", [NS])
    assert all(db_conn.execute(count.format(t), [NS]).fetchone()[0] == 0 for t in tables)
