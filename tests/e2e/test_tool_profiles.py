"""Tool profiles through the real MCP endpoint: a `core` token is shown only the core tools
the server has and is refused any other with TOOL_NOT_IN_PROFILE before it runs; a `full`
token sees and calls everything; memhub-admin and the dashboard make such tokens."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from memhub.tools.tool_profiles import CORE_TOOLS
from tests.conftest import WEB_TOKEN
from tests.integration.test_admin_cli import cli, ok_json
from tests.support.admin import act, browser, fresh_token, logged_in_csrf
from tests.support.db import insert_token
from tests.support.mcp import call, error_of

NS = "acme"


async def names(server, token: str) -> list[str]:
    async with server.client(token) as client:
        return [t.name for t in await client.list_tools()]


async def test_a_core_token_lists_only_the_core_tools_the_server_has(server, db_dsn):
    core = insert_token(db_dsn, "cursor", tool_profile="core")
    every = await names(server, WEB_TOKEN)
    shown = await names(server, core)
    assert shown == [n for n in every if n in CORE_TOOLS]  # the server's order, filtered
    assert {"memory_remember", "memory_context", "handoff_save"} <= set(shown)
    assert len(shown) < len(every)


async def test_a_full_token_lists_every_tool(server, db_dsn):
    full = insert_token(db_dsn, "cursor", tool_profile="full")
    every = await names(server, full)
    assert every == await names(server, WEB_TOKEN)
    assert {"memory_search", "namespace_init", "stats"} <= set(every)


async def test_a_core_token_calling_another_tool_is_refused_before_it_runs(server, db_dsn):
    core = insert_token(db_dsn, "cursor", tool_profile="core")
    async with server.client(core) as client:
        made = await call(client, "memory_remember", {"namespace": NS, "content": "Core works."})
        assert made["outcome"] == "created"
        refused = await error_of(client, "namespace_init", {"namespace": NS, "profile": {}})
        assert refused["code"] == "TOOL_NOT_IN_PROFILE" and refused["remedy"]
        assert refused["details"]["tool"] == "namespace_init"
        assert refused["details"]["tool_profile"] == "core"
        assert "memory_remember" in refused["details"]["allowed"]
        assert (await error_of(client, "memory_search", {"namespace": NS, "query": "x"}))[
            "code"] == "TOOL_NOT_IN_PROFILE"
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM namespace_profiles").fetchone() == (0,)


async def test_a_core_token_calling_a_tool_that_does_not_exist_is_not_told_about_profiles(
        server, db_dsn):
    core = insert_token(db_dsn, "cursor", tool_profile="core")
    async with server.client(core) as client:
        unknown = await error_of(client, "no_such_tool", {})
    assert unknown["code"] != "TOOL_NOT_IN_PROFILE"


async def test_memhub_admin_token_create_makes_a_core_token(server, db_dsn):
    made = ok_json(cli(db_dsn, "token", "create", "--surface", "cursor", "--namespace", NS,
                       "--tool-profile", "core", "--json"))
    assert made["tool_profile"] == "core"
    assert await names(server, made["token"]) == [
        n for n in await names(server, WEB_TOKEN) if n in CORE_TOOLS]
    listed = cli(db_dsn, "token", "list")
    assert listed.returncode == 0 and "rw core" in listed.stdout
    default = ok_json(cli(db_dsn, "token", "create", "--surface", "cursor", "--json"))
    assert default["tool_profile"] == "full"
    bad = cli(db_dsn, "token", "create", "--surface", "cursor", "--tool-profile", "tiny")
    assert bad.returncode == 2 and "tool-profile" in bad.stderr


async def test_the_dashboard_makes_a_core_token_and_shows_its_profile(server):
    with browser(server.base_url) as client:
        csrf = logged_in_csrf(client)
        page = act(client, "/admin/tokens", {
            "csrf": csrf, "surface": "cursor", "namespaces": NS, "access": "read-write",
            "tool_profile": "core"})
        token = fresh_token(page.text, "created")
        assert "tools: core" in page.text and '<td class="tool-profile">core</td>' in page.text
        bad = client.post("/admin/tokens", data={"csrf": csrf, "surface": "cursor",
                                                 "namespaces": NS, "tool_profile": "tiny"})
        assert bad.status_code == 400 and 'id="action-error"' in bad.text
    assert await names(server, token) == [
        n for n in await names(server, WEB_TOKEN) if n in CORE_TOOLS]


def _arguments(tool) -> dict[str, Any]:
    """Arguments of the right types for every required parameter, reading as little as
    possible (handoff_load only peeks): enough to get past the schema to the tool itself."""
    schema = tool.input_schema
    args: dict[str, Any] = {"take": False} if tool.name == "handoff_load" else {}
    for name in schema.get("required", []):
        spec = schema["properties"][name]
        spec = next((s for s in spec.get("anyOf", []) if s.get("type") != "null"), spec)
        kind = spec.get("type")
        args[name] = (NS if name == "namespace" else spec["enum"][0] if "enum" in spec
                      else {"integer": 1, "object": {}, "array": [], "boolean": False}.get(
                          kind, "00000000-0000-4000-8000-000000000000"))
    return args


async def test_a_read_only_token_lists_exactly_the_tools_it_may_call(server, db_dsn):
    """Every tool a read-only token is shown answers it (with a read's arguments); every tool
    it is not shown is still there to call, and answers FORBIDDEN."""
    reader = insert_token(db_dsn, "cursor", namespaces=[NS], read_only=True)
    async with server.client(WEB_TOKEN) as client:
        every = await client.list_tools()
    shown = await names(server, reader)
    assert shown == [t.name for t in every if t.name in shown]  # the server's order, filtered
    assert {"session_bootstrap", "recall", "memory_search", "handoff_load", "stats"} <= set(
        shown)
    assert not {"memory_remember", "memory_revise", "memory_forget", "handoff_save",
                "session_create", "namespace_init", "skill_define"} & set(shown)
    async with server.client(reader) as client:
        for tool in every:
            result = await client.call_tool(tool.name, _arguments(tool), raise_on_error=False)
            code = json.loads(result.content[0].text)["code"] if result.is_error else None
            if tool.name in shown:
                assert code != "FORBIDDEN", tool.name
            else:
                assert code == "FORBIDDEN", (tool.name, result.content[0].text[:200])


async def test_a_read_only_core_token_lists_the_core_tools_it_may_call(server, db_dsn):
    reader = insert_token(db_dsn, "cursor", read_only=True, tool_profile="core")
    assert await names(server, reader) == [
        "session_bootstrap", "recall", "memory_context", "handoff_load"]
