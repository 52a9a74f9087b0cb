"""Claude Code / Claude Desktop sometimes send a list or object argument as its JSON text
(tools/json_arguments.py). Through the real endpoint: such calls do what the caller meant;
a string parameter keeps its string; text that is not the asked-for shape is still refused."""

from __future__ import annotations

import json

from memhub.storage.sanitize import unwrap_all
from tests.support.mcp import call, error_of

NS = "acme"


async def test_json_encoded_lists_and_objects_are_read_as_what_they_encode(server, tokens):
    async with server.client(tokens["web"]) as web:
        made = await call(web, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "title": "Tokens are JWTs",
            "content": "Access tokens are JWTs signed with RS256.",
            "tags": '["auth", "jwt"]', "metadata": ' {"source": "adr-7"}'})
        old = await call(web, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "title": "Sessions in cookies",
            "content": "Sessions live in signed cookies.", "tags": ["auth"]})
        newer = await call(web, "memory_remember", {
            "namespace": NS, "kind": "DECISION", "title": "Sessions in Redis",
            "content": "Sessions live in Redis now.",
            "supersedes": json.dumps([old["memory"]["id"]])})
        found = await call(web, "memory_search", {
            "namespace": NS, "query": "JWT tokens", "kinds": '["DECISION"]',
            "tags": '["jwt"]'})
        packed = await call(web, "memory_context", {"namespace": NS, "kinds": '["DECISION"]'})
        saved = await call(web, "handoff_save", {
            "namespace": NS, "title": "t", "body": "b", "next_steps": '["step 3"]'})
    memory = made["memory"]
    assert unwrap_all(memory["tags"]) == ["auth", "jwt"]
    assert unwrap_all(memory["metadata"]) == {"source": "adr-7"}
    assert newer["superseded"] == [old["memory"]["id"]]
    assert [r["id"] for r in found["results"]] == [memory["id"]]
    assert old["memory"]["id"] not in [m["id"] for m in packed["memories"]]
    assert unwrap_all(saved["handoff"]["next_steps"]) == ["step 3"]


async def test_a_parameter_that_takes_a_string_keeps_the_string(server, tokens):
    async with server.client(tokens["web"]) as web:
        sid = (await call(web, "session_create", {"namespace": NS, "title": "s"}))["session"]["id"]
        await call(web, "session_append_event", {
            "namespace": NS, "session_id": sid, "type": "note", "payload": '{"a": 1}'})
        events = (await call(web, "session_events", {"namespace": NS, "session_id": sid}))["events"]
    assert unwrap_all(events[0]["payload"]) == '{"a": 1}'


async def test_text_that_is_not_the_asked_for_shape_is_refused_naming_the_field(server, tokens):
    async with server.client(tokens["web"]) as web:
        for tags in ("auth, jwt", '{"auth": true}', "[auth", '"auth"'):
            err = await error_of(web, "memory_search", {
                "namespace": NS, "query": "jwt", "tags": tags})
            assert (err["code"], err["details"]["fields"]) == ("INVALID_INPUT", ["tags"]), tags
        err = await error_of(web, "memory_remember", {
            "namespace": NS, "kind": "NOTE", "title": "t", "content": "c",
            "metadata": '["not", "an", "object"]'})
        assert (err["code"], err["details"]["fields"]) == ("INVALID_INPUT", ["metadata"])
