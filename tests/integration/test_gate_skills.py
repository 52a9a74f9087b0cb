"""Skills are bounded per namespace, and so is what one intent_open does with them: at most
SKILLS_MAX skills whose triggers total at most TRIGGERS_BYTES_MAX bytes (past either a
definition is QUOTA_EXCEEDED, even when two race for the last place), no more than that
evaluated per call whatever the table holds, and a bounded answer."""

from __future__ import annotations

import asyncio
import json

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memhub.errors import QuotaExceeded
from memhub.storage.gate_input import (
    GUIDANCE_CHARS_MAX,
    GUIDANCE_SKILLS_MAX,
    OMITTED_NAMES_MAX,
    SKILLS_MAX,
    TRIGGERS_BYTES_MAX,
)
from memhub.storage.postgres.queries import q
from tests.support.memories import DESKTOP, NS, open_backend
from tests.support.wait import until

RULE = {"contains": [{"var": "text"}, "deploy"]}
# About 3 KB as PostgreSQL prints it; matches any text with "deploy".
BIG = {"or": [{"contains": [{"var": "text"}, "deploy"]}]
       + [{"contains": [{"var": "text"}, f"release-train-{i:03d}"]} for i in range(60)]}
FILL = """INSERT INTO gate_skills (namespace, name, trigger, guidance, updated_by)
          SELECT %s, 'skill-' || lpad(g::text, 4, '0'), %s, %s, 'test'
            FROM generate_series(1, %s) g"""


def fill(db_conn, count: int, guidance: str = "Check the dashboard.", trigger=RULE,
         namespace: str = NS) -> None:
    """`count` skills, as if defined one by one (or before there were limits)."""
    db_conn.execute(FILL, [namespace, Jsonb(trigger), guidance, count])


def skills_in(db_conn, namespace: str = NS) -> int:
    return db_conn.execute("SELECT count(*) FROM gate_skills WHERE namespace = %s",
                           [namespace]).fetchone()[0]


def size_of(db_conn, trigger) -> int:
    return db_conn.execute("SELECT octet_length(%s::jsonb::text)",
                           [Jsonb(trigger)]).fetchone()[0]


async def test_a_namespace_holds_at_most_its_limit_of_skills_and_they_stay_editable(
        db_dsn, tmp_path, db_conn):
    fill(db_conn, SKILLS_MAX - 1)
    async with open_backend(db_dsn, tmp_path) as backend:
        made = await backend.skill_define(DESKTOP, NS, "last", RULE, "Announce it.")
        assert made["outcome"] == "created"
        with pytest.raises(QuotaExceeded) as full:
            await backend.skill_define(DESKTOP, NS, "one-more", RULE, "Announce it.")
        assert full.value.code == "QUOTA_EXCEEDED"
        assert full.value.details["limit"] == SKILLS_MAX
        for name in ("last", "skill-0001"):
            changed = await backend.skill_define(DESKTOP, NS, name, RULE, "Announce it twice.")
            assert changed["outcome"] == "updated"
        other = await backend.skill_define(DESKTOP, "other-team", "one-more", RULE, "Go.")
        assert other["outcome"] == "created"
    assert skills_in(db_conn) == SKILLS_MAX


async def test_a_namespaces_triggers_together_are_bounded_and_a_trigger_may_shrink(
        db_dsn, tmp_path, db_conn):
    big = size_of(db_conn, BIG)
    fill(db_conn, TRIGGERS_BYTES_MAX // big, trigger=BIG)  # within a trigger of the limit
    smaller = {"or": BIG["or"][:-5]}
    async with open_backend(db_dsn, tmp_path) as backend:
        with pytest.raises(QuotaExceeded) as over:
            await backend.skill_define(DESKTOP, NS, "one-more", BIG, "Go.")
        assert over.value.details == {"field": "trigger", "limit": TRIGGERS_BYTES_MAX}
        made = await backend.skill_define(DESKTOP, NS, "small", RULE, "Go.")
        assert made["outcome"] == "created"
        with pytest.raises(QuotaExceeded):  # growing past the limit
            await backend.skill_define(DESKTOP, NS, "small", BIG, "Go.")
        # A namespace over the limit (from before it existed) can still be edited down.
        fill(db_conn, TRIGGERS_BYTES_MAX // big + 2, trigger=BIG, namespace="heavy")
        shrunk = await backend.skill_define(DESKTOP, "heavy", "skill-0001", smaller, "Go.")
        assert shrunk["outcome"] == "updated"
    total = db_conn.execute("SELECT sum(octet_length(trigger::text)) FROM gate_skills"
                            " WHERE namespace = %s", [NS]).fetchone()[0]
    assert total <= TRIGGERS_BYTES_MAX


async def test_a_new_skill_waits_for_a_definition_in_flight_then_finds_the_namespace_full(
        db_dsn, tmp_path, db_conn):
    fill(db_conn, SKILLS_MAX - 1)
    async with open_backend(db_dsn, tmp_path) as backend, \
            await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as other:
        async with other.transaction():
            # Another definition, holding the namespace's lock, takes the last place.
            await other.execute(q("gate.lock_skills"), {"namespace": NS})
            await other.execute("INSERT INTO gate_skills (namespace, name, trigger, guidance,"
                                " updated_by) VALUES (%s, 'in-flight', %s, 'Go.', 'test')",
                                [NS, Jsonb(RULE)])
            late = asyncio.create_task(
                backend.skill_define(DESKTOP, NS, "late", RULE, "Go."))

            async def waiting_or_done() -> bool:
                waits = db_conn.execute("SELECT count(*) FROM pg_locks"
                                        " WHERE locktype = 'advisory' AND NOT granted")
                return late.done() or waits.fetchone()[0] > 0
            await until(waiting_or_done, what="the late definition to wait or finish")
        with pytest.raises(QuotaExceeded):
            await late
    assert skills_in(db_conn) == SKILLS_MAX


async def test_intent_open_evaluates_no_more_than_the_limits_whatever_the_table_holds(
        db_dsn, tmp_path, db_conn):
    # Namespaces that held more than the limits before there were any.
    fill(db_conn, SKILLS_MAX + 50, guidance="Check the release dashboard first. " * 70)
    fill(db_conn, 3 * TRIGGERS_BYTES_MAX // size_of(db_conn, BIG), trigger=BIG,
         namespace="heavy")
    async with open_backend(db_dsn, tmp_path) as backend:

        async def listening() -> bool:  # a listener (re)connecting drops every entry
            return (await backend.gate_cache_status(DESKTOP, NS))["listening"]
        await until(listening)
        opened = await backend.intent_open(DESKTOP, NS, {"text": "deploy the API"})
        status = await backend.gate_cache_status(DESKTOP, NS)
        heavy = await backend.intent_open(DESKTOP, "heavy", {"text": "deploy the API"})
        heavy_status = await backend.gate_cache_status(DESKTOP, "heavy")
    shown = opened["guidance"]
    assert 0 < len(shown) <= GUIDANCE_SKILLS_MAX
    assert sum(len(g["guidance"]) for g in shown) <= GUIDANCE_CHARS_MAX
    assert opened["guidance_omitted"]["count"] == SKILLS_MAX - len(shown)
    assert len(opened["guidance_omitted"]["skills"]) == OMITTED_NAMES_MAX
    assert len(json.dumps(opened)) < GUIDANCE_CHARS_MAX + 4000
    assert len(status["skills"]) == SKILLS_MAX
    evaluated = len(heavy["guidance"]) + heavy.get("guidance_omitted", {"count": 0})["count"]
    assert evaluated == len(heavy_status["skills"]) == TRIGGERS_BYTES_MAX // size_of(db_conn,
                                                                                      BIG)
