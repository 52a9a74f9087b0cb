"""Artifact tools: files (a diff, a log, a screenshot) stored once by content hash."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..errors import InvalidInput, TooLarge
from ..runtime import Runtime
from ..storage.artifact_bytes import ArtifactBytes
from ..storage.work_input import ARTIFACT_READ_MAX
from .args import READ, Cursor, Namespace
from .caller import authorize

Sha = str


def decode_content(content_base64: str | None, text: str | None, cap: int) -> ArtifactBytes:
    """The artifact's bytes, refusing anything over `cap` before decoding it whole."""
    if (content_base64 is None) == (text is None):
        raise InvalidInput("pass exactly one of content_base64 or text", field="content_base64")
    if text is not None:
        if not isinstance(text, str):
            raise InvalidInput("text must be a string", field="text")
        # A character is at least one byte: refuse early without encoding a huge string.
        if len(text) > cap:
            raise TooLarge(f"artifact is larger than {cap} bytes", max_bytes=cap)
        data = ArtifactBytes.of(text.encode("utf-8"))
    else:
        if not isinstance(content_base64, str):
            raise InvalidInput("content_base64 must be a string", field="content_base64")
        stripped = "".join(content_base64.split())
        if len(stripped) // 4 * 3 > cap + 3:
            raise TooLarge(f"artifact is larger than {cap} bytes", max_bytes=cap)
        data = ArtifactBytes.of_base64(stripped)
    if data.size > cap:
        raise TooLarge(f"artifact is larger than {cap} bytes", max_bytes=cap)
    return data


def register(mcp: FastMCP, rt: Runtime) -> None:
    @mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": False,
                           "idempotentHint": True})
    async def artifact_put(
        namespace: Namespace,
        name: Annotated[str, Field(description="File name (<= 255 chars).")],
        content_base64: str | None = None,
        text: str | None = None,
        media_type: Annotated[str | None, Field(
            description="Default text/plain for text, else application/octet-stream.")]
        = None,
    ) -> dict[str, Any]:
        """Store a file (a diff, a log, a screenshot) in this namespace: one of
        content_base64 or text. Stored once by sha256; putting it again is safe. Read it with
        artifact_get or GET /artifact/{sha256}. Errors: TOO_LARGE."""
        principal = authorize(namespace, write=True)
        cap = rt.settings.artifact_max_bytes
        data = decode_content(content_base64, text, cap)
        if media_type is None:
            media_type = ("text/plain; charset=utf-8" if text is not None
                          else "application/octet-stream")
        return await rt.storage().artifact_put(
            principal, namespace, name=name, content=data, media_type=media_type
        )

    @mcp.tool(annotations=READ)
    async def artifact_get(
        namespace: Namespace,
        sha256: Sha,
        offset: int = 0,
        length: Annotated[int | None, Field(
            description=f"<= {ARTIFACT_READ_MAX} (default).")] = None,
    ) -> dict[str, Any]:
        """Read an artifact's bytes from offset, up to 1 MiB a call; loop until eof.
        Errors: NOT_FOUND, TOO_LARGE."""
        principal = authorize(namespace, write=False)
        return await rt.storage().artifact_get(
            principal, namespace, sha256=sha256, offset=offset, length=length
        )

    @mcp.tool(annotations=READ)
    async def artifact_list(
        namespace: Namespace,
        limit: Annotated[int, Field(description="1-100")] = 50,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Artifacts of this namespace, newest first."""
        principal = authorize(namespace, write=False)
        return await rt.storage().artifact_list(principal, namespace, limit=limit,
                                                cursor=cursor)
