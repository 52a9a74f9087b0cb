"""What `tools/list` says, made cheap to read: every byte of it is paid by the client's model on
every turn (docs/tools.md, The tool list).

The tools are declared with ordinary Python types; the schema pydantic derives from them
spells an optional argument as `anyOf: [X, null]` with `default: null`, repeats "additional
properties: true" for open objects, states every MCP hint (including the ones equal to the
protocol's defaults), adds an output schema that says only "an object", and fastmcp adds a
`_meta` of its own bookkeeping to every tool. None of that tells
the model anything it needs, so the list it is sent leaves it out, and nothing it needs is
dropped: every argument, type, enum, bound and non-null default stays, and so does each tool's
description.

Only what is *listed* is rewritten. The registered tools and their validation are unchanged:
an explicit `null` for an optional argument is still accepted, an unknown argument still
refused (`additionalProperties: false` stays in the list), and results still carry
`structuredContent` (MCP allows it without an output schema).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from fastmcp.server.middleware import Middleware

NULL = {"type": "null"}
# The MCP defaults of each hint (ToolAnnotations): a hint equal to its default says nothing.
HINT_DEFAULTS = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False,
                 "open_world_hint": True}
# Meaningful only for a tool that is not read-only (MCP ToolAnnotations).
WRITE_HINTS = ("destructive_hint", "idempotent_hint")
# Named by the server's instructions once, for every tool.
SELF_EVIDENT = frozenset({"namespace"})


def compact_property(prop: dict[str, Any]) -> dict[str, Any]:
    """One argument's schema without the spelling of "optional": `anyOf [X, null]` becomes
    X (with null out of its enum), a null default goes (an omitted argument is null),
    `additionalProperties: true` on an object goes (JSON Schema's default)."""
    out = dict(prop)
    variants = out.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and NULL in variants:
        del out["anyOf"]
        out = {**next(v for v in variants if v != NULL), **out}
    if out.get("default", 0) is None:
        del out["default"]
    if isinstance(out.get("enum"), list) and None in out["enum"]:
        out["enum"] = [v for v in out["enum"] if v is not None]
    out.pop("title", None)
    return _strip_open_objects(out)


def _strip_open_objects(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_open_objects(v) for k, v in schema.items()
                if not (k == "additionalProperties" and v is True)}
    if isinstance(schema, list):
        return [_strip_open_objects(v) for v in schema]
    return schema


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k != "title"}
    out["properties"] = {name: compact_property(prop)
                         for name, prop in schema.get("properties", {}).items()}
    return out


def compact_annotations(annotations: Any) -> Any:
    """The hints that differ from MCP's defaults, and only those that apply."""
    if annotations is None:
        return None
    update: dict[str, Any] = {}
    for hint, default in HINT_DEFAULTS.items():
        value = getattr(annotations, hint, None)
        if value == default or (hint in WRITE_HINTS and annotations.read_only_hint):
            update[hint] = None
    return annotations.model_copy(update=update)


@functools.cache
def _without_meta(cls: type) -> type:
    """`cls`, listed without `_meta`: fastmcp fills it with its own bookkeeping (an empty
    tag list) that says nothing to a client's model. get_meta is the one place it is made."""
    return type(cls.__name__, (cls,), {"get_meta": lambda self: None})


def one_paragraph(text: str | None) -> str | None:
    """A docstring's line breaks are the source's wrapping, not the text's."""
    return None if text is None else re.sub(r"(?<!\n)\n(?!\n)", " ", text)


def listed(tool: Any) -> Any:
    """The tool as the list shows it (a copy: the registered tool is untouched)."""
    copy = tool.model_copy(update={"parameters": compact_schema(tool.parameters),
                                   "description": one_paragraph(tool.description),
                                   "output_schema": None,
                                   "annotations": compact_annotations(tool.annotations)})
    tool_class: type = type(tool)
    copy.__class__ = _without_meta(tool_class)  # same fields, one method overridden
    return copy


class CompactToolList(Middleware):
    async def on_list_tools(self, context, call_next):
        return [listed(tool) for tool in await call_next(context)]
