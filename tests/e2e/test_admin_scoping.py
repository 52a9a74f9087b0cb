"""Project-scoped tokens through every tool of the live server.

The tool list comes from the running server, so a tool added later is covered without touching
this file: each tool taking a `namespace` is called with type-valid dummy arguments synthesised
from its input schema, by a token scoped to another namespace (FORBIDDEN expected) and by a
read-only token (FORBIDDEN expected for writes). Positive controls show the refusals come from
the scope, not from bad arguments.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from tests.support.db import insert_token

MINE, OTHER = "mine-proj", "other-proj"
# Tools whose annotations do not say readOnlyHint=true are treated as writes.
# Writes that a read-only token may still call: they run their reads and skip their own writes
# (the bootstrap opens no session and moves no mark), so the refusal is a skipped step.
SKIPS_ITS_WRITES = {"session_bootstrap"}


def _resolve(schema: dict, defs: dict) -> dict:
    while "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    return schema


def dummy(schema: dict, defs: dict, name: str = "") -> Any:
    """A value valid for `schema` (the subset of JSON Schema pydantic emits). `name` hints at
    ids and hashes, so positive controls get past argument checks more often."""
    schema = _resolve(schema, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, defs).get("type") != "null"]
            return dummy(options[0], defs, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "uuid" or name == "id" or name.endswith("_id"):
            return str(uuid.uuid4())
        if name == "sha256":
            return "0" * 64
        if fmt == "date-time":
            return "2030-01-01T00:00:00Z"
        if fmt == "date":
            return "2030-01-01"
        size = max(schema.get("minLength", 1), 1)
        for candidate in ("x" * size, "a" * size, "0" * size, "x-1", "x.y"):
            if "pattern" not in schema or re.search(schema["pattern"], candidate):
                return candidate[: schema.get("maxLength", len(candidate))]
        return "x" * size
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1
                         if "exclusiveMinimum" in schema else 1)
        high = schema.get("maximum", low)
        return int(min(max(low, 1), high)) if kind == "integer" else float(min(max(low, 1), high))
    if kind == "boolean":
        return False
    if kind == "array":
        return [dummy(schema.get("items", {"type": "string"}), defs)
                for _ in range(schema.get("minItems", 0))]
    if kind == "object":
        props = schema.get("properties", {})
        return {k: dummy(props[k], defs, k) for k in schema.get("required", []) if k in props}
    return "x"


def arguments(tool, namespace: str) -> dict[str, Any]:
    schema = tool.input_schema
    defs = schema.get("$defs", {})
    props = schema.get("properties", {})
    args = {k: dummy(props[k], defs, k) for k in schema.get("required", []) if k in props}
    if "namespace" in props:
        args["namespace"] = namespace
    if "namespaces" in props:
        args["namespaces"] = [namespace]
    return args


def is_write(tool) -> bool:
    return not (tool.annotations and tool.annotations.read_only_hint)


async def error_code(client, name: str, args: dict) -> str | None:
    result = await client.call_tool(name, args, raise_on_error=False)
    if not result.is_error:
        return None
    text = result.content[0].text if result.content else ""
    try:
        return json.loads(text)["code"]
    except (ValueError, KeyError, TypeError):
        return f"NOT-A-MEMHUB-ERROR: {text[:200]}"


def scoped_tools(tools) -> list:
    return [t for t in tools
            if {"namespace", "namespaces"} & set(t.input_schema.get("properties", {}))]


async def test_every_namespaced_tool_refuses_a_namespace_outside_the_tokens_scope(server, db_dsn):
    token = insert_token(db_dsn, "cursor", namespaces=[MINE])
    problems = {}
    async with server.client(token) as client:
        tools = scoped_tools(await client.list_tools())
        assert tools, "no tool takes a namespace: this test would prove nothing"
        for tool in tools:
            refused = await error_code(client, tool.name, arguments(tool, OTHER))
            allowed = await error_code(client, tool.name, arguments(tool, MINE))
            if refused != "FORBIDDEN" or allowed == "FORBIDDEN":
                problems[tool.name] = {"other namespace": refused, "own namespace": allowed}
    assert problems == {}


async def test_a_read_only_token_can_read_but_every_write_tool_refuses_it(server, db_dsn):
    token = insert_token(db_dsn, "cursor", namespaces=[MINE], read_only=True)
    writer = insert_token(db_dsn, "cursor", namespaces=[MINE])
    problems = {}
    # Every tool, as a read-write token lists them (a read-only one is not shown the writes).
    async with server.client(writer) as client:
        tools = scoped_tools(await client.list_tools())
    async with server.client(token) as client:
        assert any(is_write(t) for t in tools), "no write tool found"
        for tool in tools:
            if tool.name in SKIPS_ITS_WRITES:
                result = await client.call_tool(tool.name, arguments(tool, MINE))
                skipped = {s["step"] for s in result.structured_content["steps_run"]
                           if s["status"] == "skipped"}
                if not {"session", "mark"} <= skipped:
                    problems[tool.name] = f"wrote for a read-only token: skipped only {skipped}"
                continue
            code = await error_code(client, tool.name, arguments(tool, MINE))
            if is_write(tool) and code != "FORBIDDEN":
                problems[tool.name] = f"write allowed to a read-only token: {code}"
            if not is_write(tool) and code == "FORBIDDEN":
                problems[tool.name] = "read refused to a read-only token"
            if not is_write(tool) and (code == "INTERNAL" or str(code).startswith("NOT-A")):
                # e.g. a read path writing on the way, refused by the database (0013)
                problems[tool.name] = f"read failed for a read-only token: {code}"
    assert problems == {}


async def test_an_unscoped_token_is_not_refused_by_any_namespaced_tool(server, db_dsn):
    token = insert_token(db_dsn, "desktop-cli")
    refused = []
    async with server.client(token) as client:
        for tool in scoped_tools(await client.list_tools()):
            if await error_code(client, tool.name, arguments(tool, OTHER)) == "FORBIDDEN":
                refused.append(tool.name)
    assert refused == []


async def test_stats_shows_a_scoped_token_only_its_own_namespaces(server, db_dsn, db_conn):
    db_conn.execute("SET session_replication_role = replica")
    for ns in (MINE, OTHER):
        db_conn.execute(
            "INSERT INTO memories (namespace, kind, content, content_hash, author_client)"
            " VALUES (%s, 'FACT', 'x', %s, 'web')",
            [ns, ns.encode()],
        )
    token = insert_token(db_dsn, "cursor", namespaces=[MINE])
    async with server.client(token) as client:
        result = await client.call_tool("stats", {})
    assert set(result.structured_content["namespaces"]) == {MINE}
