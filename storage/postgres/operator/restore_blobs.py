"""The artifact bytes of an import (storage/postgres/operator/restore.py): each `blob` record and
its `blob_chunk`s, checked and stored in the import's transaction.

Every blob of the file is hashed and its size counted, whether or not this database holds
that content already. The bytes are stored once per sha256 for every namespace, so a blob
this database holds is not written again; but an artifact record files a reference under the
target namespace, and a reference is what lets a token read the bytes. A file naming a hash
it does not carry the bytes of would otherwise give the importing namespace another tenant's
file (and, with a wrong size, a short read of it). A blob whose bytes do not hash to its name
or do not add up to its size refuses the whole file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ....errors import InvalidInput
from ...transfer_format import DAMAGED
from ...transfer_records import check_sha, chunk_bytes
from ...work_input import CHUNK_SIZE
from ..rows import Conn, one


@dataclass
class _Blob:
    sha: bytes
    size: int
    upload: bool  # this database does not hold the content yet
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)
    buffer: bytearray = field(default_factory=bytearray)
    idx: int = 0
    received: int = 0


class BlobRestore:
    """The blobs of one import, in file order; `sizes` holds each checked blob's size."""

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.blob: _Blob | None = None
        self.sizes: dict[str, int] = {}
        self.counts = {"stored": 0, "present": 0}

    async def begin(self, rec: dict[str, Any]) -> None:
        sha = bytes.fromhex(check_sha(rec))
        size = rec.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidInput("a blob's size must be an integer >= 0", remedy=DAMAGED)
        begun = await one(self.conn, "artifacts.begin",
                          {"sha": sha, "size": size, "chunk": CHUNK_SIZE})
        self.blob = _Blob(sha, size, bool(begun and begun["upload"]))

    async def chunk(self, rec: dict[str, Any]) -> None:
        blob = self.blob
        if blob is None or check_sha(rec) != blob.sha.hex() \
                or rec.get("offset") != blob.received:
            raise InvalidInput("a blob's chunks follow it, each at the offset where the last "
                               "ended", remedy=DAMAGED)
        data = chunk_bytes(rec)
        blob.received += len(data)
        blob.digest.update(data)
        if not blob.upload:
            return  # held here already: hashed above, never written twice
        blob.buffer += data
        # Stored in the database's own chunk size, whatever the file's.
        while len(blob.buffer) >= CHUNK_SIZE:
            await self._put(blob, bytes(blob.buffer[:CHUNK_SIZE]))
            del blob.buffer[:CHUNK_SIZE]

    async def _put(self, blob: _Blob, data: bytes) -> None:
        await one(self.conn, "artifacts.chunk_put",
                  {"sha": blob.sha, "idx": blob.idx, "data": data})
        blob.idx += 1

    async def end(self) -> None:
        """Close the blob being read, if any: refused unless its bytes are the ones it names."""
        blob, self.blob = self.blob, None
        if blob is None:
            return
        if blob.received != blob.size:
            raise InvalidInput(f"blob {blob.sha.hex()} holds {blob.received} bytes, "
                               f"not {blob.size}", remedy=DAMAGED, field="size")
        if blob.digest.digest() != blob.sha:
            raise InvalidInput(f"the bytes of blob {blob.sha.hex()} do not hash to its sha256",
                               remedy=DAMAGED, field="sha256")
        self.sizes[blob.sha.hex()] = blob.size
        if not blob.upload:
            self.counts["present"] += 1
            return
        if blob.buffer:
            await self._put(blob, bytes(blob.buffer))
        await one(self.conn, "artifacts.finish", {"sha": blob.sha})  # re-hashes the bytes
        self.counts["stored"] += 1
