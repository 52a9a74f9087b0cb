"""Small helpers for calling memhub tools through a real MCP client."""

from __future__ import annotations

import json
from typing import Any

from fastmcp.exceptions import ToolError


async def call(client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The tool's structured answer; raises ToolError on a tool error."""
    result = await client.call_tool(name, args)
    return result.structured_content


async def error_of(client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The JSON error payload of a call that must fail ({"code", "message", "remedy", ...})."""
    try:
        result = await client.call_tool(name, args)
    except ToolError as err:
        text = str(err)
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return {"code": "FRAMEWORK_VALIDATION", "message": text}  # not our JSON shape
    raise AssertionError(f"{name} succeeded but was expected to fail: {result.structured_content}")
