"""One rule for every write tool, through the real MCP endpoint: a write that did not apply is
a tool error (isError) with the code CONFLICT, a remedy, and details saying what is there now;
never an answer shaped like a success."""

from __future__ import annotations

import json
from typing import Any

from memhub.storage.sanitize import unwrap_untrusted
from tests.support.mcp import call

NS = "acme"


async def refused(client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The details of a call that must be refused with CONFLICT (and nothing else)."""
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, f"{tool} answered instead of refusing: {result.structured_content}"
    payload = json.loads(result.content[0].text)
    assert payload["code"] == "CONFLICT", payload
    assert payload["remedy"] and "outcome" not in payload
    return payload["details"]


async def test_a_stale_revise_is_refused_with_the_winning_revision(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        made = await call(web, "memory_remember", {"namespace": NS, "content": "Port 8080."})
        mid = made["memory"]["id"]
        won = await call(cursor, "memory_revise", {"namespace": NS, "id": mid,
                                                   "expected_revision": 1,
                                                   "content": "Port 8081."})
        now = await refused(web, "memory_revise", {"namespace": NS, "id": mid,
                                                   "expected_revision": 1,
                                                   "content": "Port 9000."})
    assert (now["current_revision"], now["current_author"]) == (2, "cursor")
    assert unwrap_untrusted(now["current_content"]) == "Port 8081."
    assert now["current_at"] == won["memory"]["updated_at"]
    assert now["status"] == "ACTIVE" and now["expected_revision"] == 1


async def test_revising_forgetting_verifying_or_superseding_a_superseded_memory_names_its_successor(
        server, tokens):
    async with server.client(tokens["web"]) as web:
        old = (await call(web, "memory_remember", {"namespace": NS,
                                                   "content": "Queue on Redis."}))["memory"]
        new = (await call(web, "memory_remember", {"namespace": NS,
                                                   "content": "Queue on PostgreSQL.",
                                                   "supersedes": [old["id"]]}))["memory"]
        answers = [
            await refused(web, "memory_revise", {"namespace": NS, "id": old["id"],
                                                 "expected_revision": 1, "content": "x"}),
            await refused(web, "memory_forget", {"namespace": NS, "id": old["id"],
                                                 "reason": "wrong"}),
            await refused(web, "memory_verify", {"namespace": NS, "id": old["id"]}),
            (await refused(web, "memory_remember", {
                "namespace": NS, "content": "Queue on Kafka.",
                "supersedes": [old["id"]]}))["not_active"][0],
        ]
    for now in answers:
        assert (now["id"], now["status"], now["superseded_by"]) == (
            old["id"], "SUPERSEDED", new["id"])
        assert now["current_revision"] == 1 and now["current_author"] == "web"
        assert unwrap_untrusted(now["current_content"]) == "Queue on Redis."


async def test_a_key_already_taken_is_refused_with_the_memory_holding_it(server, tokens):
    async with server.client(tokens["web"]) as web:
        holder = (await call(web, "memory_remember", {"namespace": NS, "key": "queue",
                                                      "content": "Queue on Redis."}))["memory"]
        now = await refused(web, "memory_remember", {"namespace": NS, "key": "queue",
                                                     "content": "Queue on Kafka."})
    assert now["existing_id"] == holder["id"] == now["existing"]["id"]
    assert unwrap_untrusted(now["existing"]["current_content"]) == "Queue on Redis."


async def test_a_handoff_taken_by_another_is_refused_with_its_taker(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        hid = (await call(web, "handoff_save", {"namespace": NS, "title": "t",
                                                "body": "b"}))["handoff"]["id"]
        await call(cursor, "handoff_load", {"namespace": NS, "id": hid})
        now = await refused(web, "handoff_load", {"namespace": NS, "id": hid})
    assert (now["handoff_id"], now["status"], now["taken_by"]) == (hid, "taken", "cursor")
    assert now["taken_at"]


async def test_an_append_to_a_closed_session_is_refused_with_who_closed_it(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        sid = (await call(web, "session_create", {"namespace": NS,
                                                  "title": "work"}))["session"]["id"]
        await call(web, "session_append_event", {"namespace": NS, "session_id": sid,
                                                 "type": "step", "payload": {"n": 1}})
        closed = await call(cursor, "session_close", {"namespace": NS, "session_id": sid})
        now = await refused(web, "session_append_event", {"namespace": NS, "session_id": sid,
                                                          "type": "step", "payload": {"n": 2}})
    assert (now["session_id"], now["status"], now["closed_by"]) == (sid, "closed", "cursor")
    assert now["closed_at"] == closed["session"]["closed_at"] and now["event_count"] == 1


async def test_a_second_intent_outcome_is_refused_with_the_first(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        iid = (await call(web, "intent_open", {"namespace": NS,
                                               "intent": {"text": "deploy"}}))["intent_id"]
        await call(cursor, "gate_close_outcome", {"namespace": NS, "intent_id": iid,
                                                  "outcome": "deployed"})
        now = await refused(web, "gate_close_outcome", {"namespace": NS, "intent_id": iid,
                                                        "outcome": "rolled back"})
    assert (now["id"], now["outcome"], now["closed_by"]) == (iid, "deployed", "cursor")
    assert now["closed_at"]


async def test_a_stale_namespace_init_is_refused_with_the_profile_now(server, tokens):
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        await call(cursor, "namespace_init", {"namespace": NS,
                                              "profile": {"description": "Billing."}})
        now = await refused(web, "namespace_init", {"namespace": NS, "expected_version": 0,
                                                    "profile": {"description": "Payments."}})
    assert (now["current_version"], now["updated_by"]) == (1, "cursor")
    assert unwrap_untrusted(now["current_profile"]["description"]) == "Billing."
    assert now["updated_at"]


async def test_a_stale_skill_definition_is_refused_with_the_skill_now(server, tokens):
    rule = {"contains": [{"var": "tags"}, "prod"]}
    skill = {"namespace": NS, "name": "prod-deploys", "trigger": rule}
    async with server.client(tokens["web"]) as web, server.client(tokens["cursor"]) as cursor:
        made = await call(web, "skill_define", {**skill, "guidance": "Check the dashboard.",
                                                "expected_version": 0})
        assert made["outcome"] == "created" and made["skill"]["version"] == 1
        updated = await call(cursor, "skill_define", {**skill, "guidance": "Page on-call.",
                                                      "expected_version": 1})
        assert updated["outcome"] == "updated" and updated["skill"]["version"] == 2
        stale = await refused(web, "skill_define", {**skill, "guidance": "Ask first.",
                                                    "expected_version": 1})
        exists = await refused(web, "skill_define", {**skill, "guidance": "Ask first.",
                                                     "expected_version": 0})
        # A retry of the definition that won finds it there: unchanged, not refused.
        again = await call(cursor, "skill_define", {**skill, "guidance": "Page on-call.",
                                                    "expected_version": 1})
    for now in (stale, exists):
        assert (now["name"], now["current_version"], now["updated_by"]) == (
            "prod-deploys", 2, "cursor")
        assert now["current_guidance"] == "Page on-call." and now["current_trigger"] == rule
    assert again["outcome"] == "unchanged" and again["skill"]["version"] == 2
