"""Argument types and annotations shared by the tool groups.

A type's `description` is part of the prompt the calling model reads (the manifest snapshot in
tests/e2e/tool_manifest.json shows every wording change as a diff)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..storage.memory_input import KINDS

# Named once, in the server's instructions: every tool takes it.
Namespace = str
MemoryId = str
Kind = Annotated[str, Field(json_schema_extra={"enum": list(KINDS)})]
Kinds = Annotated[
    list[str] | None,
    Field(json_schema_extra={"items": {"enum": list(KINDS)}}),
]
Also = Annotated[list[str] | None, Field(
    description="<= 4 rephrasings (<= 300 chars each).")]
# An idempotency key, as the server's instructions say once for every write.
RequestId = str | None
AsOf = Annotated[str | None, Field(
    description="A past ISO 8601 time with zone: read as of then.")]
Cursor = Annotated[str | None, Field(description="The last page's next_cursor.")]
IncludeQuarantined = Annotated[
    bool, Field(description="Quarantined ones too (as data).")
]

# MCP tool annotations: hints a client may show or act on (e.g. ask before a write).
WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
READ = {"readOnlyHint": True, "idempotentHint": True}
