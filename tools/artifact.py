"""Artifact tools: files (a diff, a log, a screenshot) stored once by content hash."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ..errors import InvalidInput, TooLarge
from ..runtime import Runtime
from ..storage.artifact_bytes import ArtifactBytes
from ..storage.work_input import ARTIFACT_READ_MAX
from .args import READ, Namespace
from .caller import authorize

Sha = Annotated[str, Field(description="The artifact's sha256 (64 hex chars).")]


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
        name: Annotated[str, Field(description="File name shown in listings (<= 255 chars).")],
        content_base64: Annotated[str | None, Field(description="The bytes, base64.")] = None,
        text: Annotated[str | None, Field(description="Or the content as UTF-8 text.")] = None,
        media_type: Annotated[str | None, Field(
            description="e.g. 'text/x-diff', 'image/png'. Default: 'text/plain; "
                        "charset=utf-8' for text, 'application/octet-stream' otherwise.")]
        = None,
    ) -> dict[str, Any]:
        """Store a file (a diff, a log, a screenshot) and reference it from this namespace.

        Pass exactly one of content_base64 or text. Content is addressed by its sha256 and
        stored once however many namespaces hold it; putting the same content again is safe.
        Returns {"outcome": "created" | "exists", "bytes_stored", "artifact": {"sha256",
        "size", ...}}; bytes_stored is true when this namespace held no artifact with these
        bytes before (whatever other namespaces hold). Fetch it with artifact_get or over
        HTTP at GET /artifact/{sha256} (same token). Limit: the server's artifact cap (50 MB
        by default; TOO_LARGE names it). Errors: INVALID_INPUT (both/neither content, bad
        base64, bad media_type), TOO_LARGE.
        """
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
        offset: Annotated[int, Field(description="First byte to return (default 0).")] = 0,
        length: Annotated[int | None, Field(
            description=f"Bytes to return, at most {ARTIFACT_READ_MAX} (the default).")] = None,
    ) -> dict[str, Any]:
        """Read an artifact's bytes, ranged: up to 1 MiB per call from `offset`.

        Returns {"content_base64", "offset", "length", "size", "eof", "media_type", "name",
        ...}; loop with offset += length until eof. Errors: NOT_FOUND (not in this
        namespace), INVALID_INPUT (offset beyond the end, bad sha256), TOO_LARGE (length
        above 1 MiB).
        """
        principal = authorize(namespace, write=False)
        return await rt.storage().artifact_get(
            principal, namespace, sha256=sha256, offset=offset, length=length
        )

    @mcp.tool(annotations=READ)
    async def artifact_list(
        namespace: Namespace,
        limit: Annotated[int, Field(description="1-100")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")]
        = None,
    ) -> dict[str, Any]:
        """List the artifacts this namespace holds, newest first (only this namespace's,
        even when the same content is stored for others). Returns {"artifacts",
        "next_cursor"}."""
        principal = authorize(namespace, write=False)
        return await rt.storage().artifact_list(principal, namespace, limit=limit,
                                                cursor=cursor)
