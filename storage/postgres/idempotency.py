"""Idempotent writes: one stored answer per (namespace, token, client_request_id).

Shared by every write that takes a `client_request_id` (memories, handoffs, sessions). Keys
belong to the token that used them, not to its surface: two tokens of one surface (scoped to
different projects, or to the same one) never replay each other's answers, which may hold what
the other token may not see. A rotated token starts a fresh key space (migration 0021). The
claim is the first statement of the write's own transaction, so the stored response commits
with the write or neither does; a concurrent request with the same key waits on the claim,
then replays the stored answer. Not to be confused with dedup (same content from anyone).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg.types.json import Jsonb

from ...errors import IdempotencyMismatch, Retryable
from ..principal import Principal
from .core import PgCore
from .queries import q
from .rows import Conn, one


def request_hash(operation: str, payload: dict[str, Any]) -> bytes:
    """What a client_request_id is bound to: the operation and its raw arguments."""
    encoded = json.dumps({"op": operation, **payload}, sort_keys=True, default=str,
                         separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).digest()


class IdempotentWrites(PgCore):
    """The base of every store whose writes take a `client_request_id`."""

    async def _claim(
        self, conn: Conn, key: dict[str, Any], surface: str, operation: str, digest: bytes
    ) -> dict[str, Any] | None:
        """Claim `key` for this request (None), or return the stored answer of the one that did."""
        claimed = await one(conn, "idempotency.claim_request",
                             {**key, "surface": surface, "operation": operation,
                              "request_hash": digest})
        if claimed is not None:
            return None
        stored = await one(conn, "idempotency.stored_request", key)
        if stored is None:
            # Claimed and released again between our two statements (e.g. retention GC).
            raise Retryable("the idempotency record changed under this request; retry it")
        if stored["operation"] != operation or bytes(stored["request_hash"]) != digest:
            raise IdempotencyMismatch(
                "this client_request_id was already used for a different request",
                client_request_id=key["request_id"],
            )
        response = dict(stored["response"])
        response["original_outcome"] = response.get("outcome")
        response["outcome"] = "replayed"
        return response

    async def _idempotent_write(
        self,
        principal: Principal,
        namespace: str,
        request_id: str | None,
        operation: str,
        payload: dict[str, Any],
        body: Callable[[Conn], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        key = {"namespace": namespace, "token_id": principal.token_id, "request_id": request_id}
        digest = request_hash(operation, payload)

        async def write(conn: Conn) -> dict[str, Any]:
            if request_id is not None:
                replay = await self._claim(conn, key, principal.surface, operation, digest)
                if replay is not None:
                    return replay
            result = await body(conn)
            if request_id is not None:
                await conn.execute(q("idempotency.store_response"),
                                   {**key, "response": Jsonb(result)})
            return result

        # With a key a lost connection is safe to retry: the retry replays or redoes.
        return await self._run(namespace, write, retry_safe=request_id is not None)
