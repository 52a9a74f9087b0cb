"""An artifact_put's bytes from base64, a piece at a time: the same size, sha256 and stored
chunks as the decoded bytes, strict base64 refused, and never a whole copy of the content."""

from __future__ import annotations

import base64
import hashlib
import os
import tracemalloc

import pytest

from memhub.errors import InvalidInput
from memhub.storage.artifact_bytes import PIECE_CHARS, ArtifactBytes
from memhub.storage.work_input import CHUNK_SIZE


@pytest.mark.parametrize("size", [0, 1, CHUNK_SIZE, 3 * CHUNK_SIZE, 3 * CHUNK_SIZE + 1,
                                  7 * CHUNK_SIZE + 12345])
def test_base64_gives_the_size_hash_and_chunks_of_its_bytes(size):
    data = os.urandom(size)
    content = ArtifactBytes.of_base64(base64.b64encode(data).decode())
    whole = ArtifactBytes.of(data)
    assert (content.size, content.sha256) == (whole.size, whole.sha256)
    assert content.sha256 == hashlib.sha256(data).digest()
    chunks = [bytes(c) for c in content.chunks()]
    assert chunks == [data[i:i + CHUNK_SIZE] for i in range(0, size, CHUNK_SIZE)]
    assert chunks == [bytes(c) for c in whole.chunks()]
    assert [bytes(c) for c in content.chunks()] == chunks  # again, for a retried transaction


@pytest.mark.parametrize("text", [
    "QQ", "QQ=", "Q===", "=QQ=", "QQ==QQ==", "QU JD", "QUJD\n", "QUJ*", "QUJDé",
    "A" * (PIECE_CHARS - 4) + "QQ==" + "QUJD",  # padding that ends a piece, not the text
])
def test_anything_but_strict_base64_is_invalid_input(text):
    with pytest.raises(InvalidInput) as caught:
        ArtifactBytes.of_base64(text)
    assert caught.value.code == "INVALID_INPUT" and caught.value.details["field"] == \
        "content_base64"


def test_base64_is_hashed_and_chunked_without_a_copy_of_the_whole_content():
    size = 24 * CHUNK_SIZE
    text = base64.b64encode(os.urandom(size)).decode()
    tracemalloc.start()
    try:
        content = ArtifactBytes.of_base64(text)
        for chunk in content.chunks():
            assert len(chunk) == CHUNK_SIZE
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert content.size == size
    assert peak < size // 2  # a piece of text and its three chunks, never the whole
