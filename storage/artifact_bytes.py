"""An artifact's bytes on their way into storage, held once.

An artifact_put of the 50 MB cap arrives as about 70 MB of base64 text, which the MCP layer
keeps (the request body and the parsed argument) until the call returns. Decoding it whole
would add an ASCII copy of the text and the 50 MB it decodes to, and slicing that into chunks
another 50 MB. Here the text is decoded a piece at a time, twice: once to hash and measure it
(the sha256 names the content before anything is sent), and once more, lazily, as the store
sends each chunk. A piece is 4 MiB of text, exactly three stored chunks; the chunks handed to
the driver are views of it, not copies.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Iterator

from ..errors import InvalidInput
from .work_input import CHUNK_SIZE

# Base64 characters decoded at a time: a multiple of 4 (whole quanta) that decodes to exactly
# three stored chunks, so every chunk but the last is CHUNK_SIZE bytes.
PIECE_CHARS = 4 * CHUNK_SIZE


def _pieces(text: str) -> Iterator[bytes]:
    """The bytes of base64 `text` (no whitespace), a piece at a time. INVALID_INPUT unless it
    is strict base64: the alphabet, padding only at its very end, whole quanta."""
    for start in range(0, len(text), PIECE_CHARS):
        piece = text[start:start + PIECE_CHARS]
        try:
            if start + PIECE_CHARS < len(text) and "=" in piece:
                raise ValueError("padding before the end")
            # A str is read in place (ASCII only), without an encoded copy.
            yield binascii.a2b_base64(piece, strict_mode=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("content_base64 is not valid base64",
                               field="content_base64") from None


class ArtifactBytes:
    """The bytes of one artifact_put: their size and sha256, known before anything is sent,
    and the stored chunks (CHUNK_SIZE bytes, the last shorter), made each time they are asked
    for (a transaction retried after a lost connection sends them again)."""

    def __init__(self, source: bytes | str, size: int, sha256: bytes) -> None:
        self._source = source
        self.size = size
        self.sha256 = sha256

    @classmethod
    def of(cls, data: bytes) -> ArtifactBytes:
        return cls(data, len(data), hashlib.sha256(data).digest())

    @classmethod
    def of_base64(cls, text: str) -> ArtifactBytes:
        """Base64 `text` without whitespace. Raises INVALID_INPUT (not base64)."""
        digest, size = hashlib.sha256(), 0
        for piece in _pieces(text):
            digest.update(piece)
            size += len(piece)
        return cls(text, size, digest.digest())

    def chunks(self) -> Iterator[memoryview]:
        pieces = _pieces(self._source) if isinstance(self._source, str) else [self._source]
        for piece in pieces:
            view = memoryview(piece)
            for offset in range(0, len(piece), CHUNK_SIZE):
                yield view[offset:offset + CHUNK_SIZE]
