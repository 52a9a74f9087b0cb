"""Array and object arguments that arrive JSON-encoded in a string are decoded first.

Claude Code and Claude Desktop (through their shared agent SDK) intermittently send a list or
object argument as its JSON text: `"tags": "[\\"auth\\"]"` instead of `["auth"]` (reported
upstream again and again: anthropics/claude-code #5504, #22394, #59227, #86459, #93179). The
call then fails schema validation although the caller meant exactly what the schema asks for.

Decoded only where it cannot change a meaning: the parameter's schema accepts an array or an
object and never a string (so `session_append_event`'s `payload`, which may be a string, is
left alone), and the text decodes to that shape. Anything else goes on unchanged, and the
schema check refuses it as before (INVALID_INPUT naming the field).
"""

from __future__ import annotations

import logging
from typing import Any

from fastmcp.server.middleware import Middleware

from .. import bounded_json

logger = logging.getLogger(__name__)

_SHAPES = {"array": list, "object": dict}


def _looks_like_json(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip()[:1] in ("[", "{")


def accepted_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a parameter's schema accepts at its top level."""
    kinds: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        kinds.add(declared)
    elif isinstance(declared, list):
        kinds.update(t for t in declared if isinstance(t, str))
    for branch in (*schema.get("anyOf", ()), *schema.get("oneOf", ())):
        if isinstance(branch, dict):
            kinds |= accepted_types(branch)
    return kinds


def decode_stringified(arguments: dict[str, Any], properties: dict[str, Any]) -> list[str]:
    """Decode, in place, the string arguments that are JSON text of the array or object their
    schema asks for; returns the names decoded."""
    decoded = []
    for name, value in arguments.items():
        if not _looks_like_json(value):
            continue
        schema = properties.get(name)
        kinds = accepted_types(schema) if isinstance(schema, dict) else set()
        if "string" in kinds or not kinds & _SHAPES.keys():
            continue
        try:
            parsed = bounded_json.loads(value)
        except ValueError:
            continue
        if any(isinstance(parsed, _SHAPES[kind]) for kind in kinds & _SHAPES.keys()):
            arguments[name] = parsed
            decoded.append(name)
    return decoded


class StringifiedArguments(Middleware):
    async def on_call_tool(self, context, call_next):
        message = context.message
        arguments = message.arguments or {}
        # Only a call carrying a string that looks like JSON pays for the schema lookup.
        server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
        if server is not None and any(map(_looks_like_json, arguments.values())):
            tool = await server.get_tool(message.name)
            if tool is not None:
                arguments = dict(arguments)
                names = decode_stringified(arguments, tool.parameters.get("properties", {}))
                if names:
                    logger.debug("decoded JSON-encoded arguments",
                                 extra={"tool": message.name, "arguments": names})
                    context = context.copy(
                        message=message.model_copy(update={"arguments": arguments}))
        return await call_next(context)
