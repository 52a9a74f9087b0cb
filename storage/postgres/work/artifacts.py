"""`ArtifactStore`: files stored once by content (a mixin over `PgCore`).

The bytes live in `artifact_blobs`/`artifact_chunks` (1 MiB bytea chunks, global, deduplicated
by sha256); a namespace sees content only through its own rows in `artifacts`. The app role
has no privilege on the blob tables: it stores and reads bytes through SECURITY DEFINER
functions that re-hash uploads and refuse reads of content no visible namespace references.
"""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ....errors import InvalidInput, NotFound, TooLarge
from ...artifact_bytes import ArtifactBytes
from ...cursors import decode_cursor, keyset_page
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...sanitize import wrap_untrusted
from ...work_input import (
    ARTIFACT_NAME_MAX,
    ARTIFACT_READ_MAX,
    CHUNK_SIZE,
    LIST_LIMIT_MAX,
    SHA256_RE,
    bounded_limit,
    text_field,
)
from ..core import ALL_NAMESPACES
from ..queries import q
from ..rows import Conn, many, one
from ..server_secrets import ServerSecrets

MEDIA_TYPE_RE = re.compile(
    r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
    r"(; ?[a-z0-9_-]{1,32}=[a-z0-9_.+-]{1,64})?$"
)


def artifact_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "sha256": bytes(row["sha256"]).hex(),
        "namespace": row["namespace"],
        "name": wrap_untrusted(row["name"]),
        "media_type": row["media_type"],
        "size": row["size"],
        "author_client": row["author_client"],
        "created_at": iso(row["created_at"]),
    }


def check_sha(value: Any) -> bytes:
    if not isinstance(value, str) or not SHA256_RE.fullmatch(value.lower()):
        raise InvalidInput("sha256 must be 64 hex characters", field="sha256")
    return bytes.fromhex(value.lower())


def check_media_type(value: Any) -> str:
    if not isinstance(value, str) or not MEDIA_TYPE_RE.fullmatch(value.strip().lower()):
        raise InvalidInput("media_type must look like 'type/subtype' (optionally "
                           "'; charset=utf-8')", field="media_type")
    return value.strip().lower()


class ArtifactStore(ServerSecrets):
    async def artifact_put(
        self, principal: Principal, namespace: str, *, name: str,
        content: bytes | ArtifactBytes, media_type: str,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        cap = self.settings.artifact_max_bytes
        if isinstance(content, bytes):
            content = ArtifactBytes.of(content)
        if content.size > cap:
            raise TooLarge(f"artifact is larger than {cap} bytes", max_bytes=cap)
        name = text_field(name, "name", max_chars=ARTIFACT_NAME_MAX)
        media_type = check_media_type(media_type)
        sha, size = content.sha256, content.size

        def chunks() -> Iterator[dict[str, Any]]:
            # Made as the driver sends them (it takes any iterable), never all at once.
            for i, data in enumerate(content.chunks()):
                yield {"sha": sha, "idx": i, "data": data}

        async def put(conn: Conn) -> dict[str, Any]:
            # The answer depends on this namespace alone: whether the global blob already
            # existed (another tenant's file) must not show, in the answer or in its timing.
            held = await one(conn, "artifacts.first_ref_in_namespace",
                             {"namespace": namespace, "sha": sha})
            begun = await one(conn, "artifacts.begin", {"sha": sha, "size": size,
                                                        "chunk": CHUNK_SIZE})
            async with conn.cursor() as cur:
                if begun and begun["upload"]:
                    await cur.executemany(q("artifacts.chunk_put"), chunks())
                    await conn.execute(q("artifacts.finish"), {"sha": sha})
                elif held is None:
                    # Stored for another namespace: send and hash the bytes anyway, as an
                    # upload would, so a large put does not answer faster when someone
                    # else already holds the file.
                    await cur.executemany(q("artifacts.hash_chunk"), chunks())
            row = await one(conn, "artifacts.insert_ref", {
                "namespace": namespace, "sha": sha, "name": name, "media_type": media_type,
                "size": size, "author": principal.surface,
            })
            outcome = "created"
            if row is None:
                row = await one(conn, "artifacts.ref", {"namespace": namespace, "sha": sha,
                                                        "name": name})
                outcome = "exists"
            assert row is not None
            return {"outcome": outcome, "bytes_stored": held is None,
                    "artifact": artifact_dict(row)}

        # Content-addressed: a replay after a lost connection stores nothing twice.
        return await self._run(namespace, put, retry_safe=True)

    async def artifact_get(
        self, principal: Principal, namespace: str, *, sha256: str, offset: int = 0,
        length: int | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        sha = check_sha(sha256)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput("offset must be an integer >= 0", field="offset")
        if length is not None:
            if isinstance(length, bool) or not isinstance(length, int) or length < 1:
                raise InvalidInput("length must be an integer >= 1", field="length")
            if length > ARTIFACT_READ_MAX:
                raise TooLarge(f"length is larger than {ARTIFACT_READ_MAX} bytes per call",
                               field="length", max_bytes=ARTIFACT_READ_MAX)

        async def read(conn: Conn) -> dict[str, Any]:
            ref = await one(conn, "artifacts.first_ref_in_namespace",
                            {"namespace": namespace, "sha": sha})
            if ref is None:
                raise NotFound(f"no artifact {sha.hex()} in namespace {namespace!r}")
            size = ref["size"]
            if offset > size or (offset == size and size > 0):
                raise InvalidInput(
                    f"offset {offset} is outside the artifact ({size} bytes)",
                    remedy="Read from an offset below the size.", field="offset", size=size,
                )
            want = min(length or ARTIFACT_READ_MAX, size - offset)
            got = await one(conn, "artifacts.read", {"sha": sha, "offset": offset,
                                                     "length": want})
            data = got["data"] if got else None
            if data is None:
                raise NotFound(f"no artifact {sha.hex()} in namespace {namespace!r}")
            return {
                **artifact_dict(ref), "offset": offset, "length": len(data),
                "eof": offset + len(data) >= size,
                "content_base64": base64.b64encode(bytes(data)).decode("ascii"),
            }

        return await self._run(namespace, read, retry_safe=True)

    async def artifact_list(
        self, principal: Principal, namespace: str, *, limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        limit = bounded_limit(limit, LIST_LIMIT_MAX)
        seal = await self.cursor_seal("artifacts", namespace)
        before = decode_cursor(seal, cursor)

        async def read(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, "artifacts.list", {"namespace": namespace,
                                                       "before_seq": before, "limit": limit + 1})
            items, next_cursor = keyset_page(rows, limit, artifact_dict, seal)
            return {"artifacts": items, "next_cursor": next_cursor}

        return await self._run(namespace, read, retry_safe=True)

    # --- streaming (GET /artifact/{sha256}) -------------------------------------------------
    def _scope(self, principal: Principal) -> str | tuple[str, ...]:
        return ALL_NAMESPACES if principal.namespaces is None else principal.namespaces

    async def artifact_meta(self, principal: Principal, sha256: str) -> dict[str, Any]:
        try:
            sha = check_sha(sha256)
        except InvalidInput:
            raise NotFound("no such artifact") from None

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "artifacts.first_visible_ref", {"sha": sha})
            if row is None:
                raise NotFound("no such artifact")
            return {"sha256": sha.hex(), "size": row["size"], "media_type": row["media_type"]}

        return await self._run(self._scope(principal), read, retry_safe=True)

    async def artifact_stream(
        self, principal: Principal, sha256: str, start: int, end: int
    ) -> AsyncIterator[bytes]:
        sha = check_sha(sha256)
        scope = self._scope(principal)
        position = start
        while position < end:
            # Stop at chunk boundaries so each read touches one stored chunk.
            upto = min(end, (position // CHUNK_SIZE + 1) * CHUNK_SIZE)

            async def read(conn: Conn, position: int = position, upto: int = upto) -> bytes:
                got = await one(conn, "artifacts.read", {"sha": sha, "offset": position,
                                                         "length": upto - position})
                if got is None or got["data"] is None:
                    raise NotFound("no such artifact")
                return bytes(got["data"])

            # The blob is immutable, so reads in separate transactions stay consistent.
            data = await self._run(scope, read, retry_safe=True)
            if not data:
                return
            yield data
            position += len(data)
