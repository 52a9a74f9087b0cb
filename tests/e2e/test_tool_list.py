"""What `tools/list` costs the client's model, through the real endpoint (tools/tool_list.py):
within its size for each profile, yet nothing a call needs is lost, and the registered tools
still accept what the list no longer spells out (an explicit null, structured results)."""

from __future__ import annotations

import json

from memhub.tools.server import build_mcp
from memhub.tools.tool_list import compact_property
from tests.conftest import WEB_TOKEN
from tests.support.db import insert_token

# issue 45's ceilings: the reference memory server lists 9 tools in 11.6 KB.
CEILING = {"core": 8_000, "full": 28_000}


def wire(tools) -> bytes:
    """The `tools` array as the client received it, as compact JSON."""
    return json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json")
                       for t in tools], ensure_ascii=False, separators=(",", ":")).encode()


async def test_each_profile_lists_within_its_ceiling(server, db_dsn):
    for profile, ceiling in CEILING.items():
        token = insert_token(db_dsn, "cursor", tool_profile=profile)
        async with server.client(token) as client:
            size = len(wire(await client.list_tools()))
        assert size <= ceiling, (profile, size)


async def test_the_list_keeps_every_argument_type_enum_and_default(server):
    """Compared with the schema the registered tools validate against: the same arguments,
    required ones, types, enums and non-null defaults; only the spelling of "optional" and
    the bookkeeping went."""
    mcp = build_mcp(server.app.state.runtime)
    registered = {t.name: t for t in await mcp.list_tools(run_middleware=False)}
    async with server.client(WEB_TOKEN) as client:
        listed = {t.name: t for t in await client.list_tools()}
    assert set(listed) == set(registered)
    for name, tool in registered.items():
        full, shown = tool.parameters, listed[name].input_schema
        assert shown.get("required", []) == full.get("required", []), name
        assert set(shown["properties"]) == set(full["properties"]), name
        assert shown.get("additionalProperties") is False, name
        for arg, prop in full["properties"].items():
            got = shown["properties"][arg]
            variants = prop.get("anyOf", [prop])
            types = {v.get("type") for v in variants} - {"null"}
            assert got.get("type") in types or (len(types) > 1 and "anyOf" in got), (name, arg)
            if prop.get("default") is not None:
                assert got["default"] == prop["default"], (name, arg)
            enum = [v for v in prop.get("enum", []) if v is not None]
            assert got.get("enum", []) == enum, (name, arg)
        assert "_meta" not in listed[name].model_dump(by_alias=True, exclude_none=True)
        assert listed[name].output_schema is None


async def test_what_the_list_leaves_out_is_still_accepted(server):
    async with server.client(WEB_TOKEN) as client:
        made = await client.call_tool("memory_remember", {
            "namespace": "listed", "content": "Deploys go out on Tuesdays.", "title": None,
            "tags": None, "origin": None})
        found = await client.call_tool("memory_search", {
            "namespace": "listed", "query": "deploys", "tags": None, "kinds": None})
    assert made.structured_content["outcome"] == "created"
    assert found.structured_content["results"][0]["id"] == made.structured_content[
        "memory"]["id"]


def test_optional_is_spelled_by_omission():
    assert compact_property({"anyOf": [{"type": "string"}, {"type": "null"}],
                             "default": None, "description": "d"}) == {
        "type": "string", "description": "d"}
    assert compact_property({"anyOf": [{"type": "string"}, {"type": "null"}],
                             "default": None, "enum": ["a", None]}) == {
        "type": "string", "enum": ["a"]}
    assert compact_property({"type": "integer", "default": 10}) == {
        "type": "integer", "default": 10}
    assert compact_property({"anyOf": [{"additionalProperties": True, "type": "object"},
                                       {"type": "null"}], "default": None}) == {
        "type": "object"}
