"""`LimitsStore`: a token's own limits and a namespace's quota, set by the operator (migrations
0041, 0042). A quota is changed only through memhub_set_quota, which refuses a transaction not
scoped to every namespace and counts the namespace's use afresh; the triggers of 0042 keep the
counts and refuse a write past the quota."""

from __future__ import annotations

from typing import Any

from ....errors import NotFound
from ...admin import Actor
from ...limits import check_quota
from ...memory_dicts import iso
from ...principal import TokenLimits
from ..core import ALL_NAMESPACES, PgCore
from ..rows import Conn, many, one, one_row
from .admin import _audit, public_token
from .github_grants import _check_namespace

MAX_QUOTAS_LISTED = 1000


def quota_dict(namespace: str, row: dict[str, Any] | None,
               use: dict[str, Any] | None = None) -> dict[str, Any]:
    """A quota as the operator sees it: its limits (None: none), the use and who set it."""
    counted = row if row is not None else use or {}
    return {
        "namespace": namespace,
        "max_memories": row["max_memories"] if row else None,
        "max_bytes": row["max_bytes"] if row else None,
        "memories": counted.get("used_memories", 0),
        "bytes": counted.get("used_bytes", 0),
        "set_by": row["set_by"] if row else None,
        "set_at": iso(row["set_at"]) if row else None,
    }


class LimitsStore(PgCore):
    async def set_token_limits(self, actor: Actor, token_id: int,
                               limits: TokenLimits) -> dict[str, Any]:
        async def write(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "limits.set_token_limits", {"id": token_id,
                                                              **limits.as_dict()})
            if row is None:
                raise NotFound(f"no active token with id {token_id}",
                               remedy="List the tokens first (memhub-admin token list); an "
                                      "OAuth connection's tokens use the server's defaults.")
            token = public_token(row)
            await _audit(conn, actor, "token.limits", token_id=token["id"],
                         token_prefix=token["prefix"], detail=limits.as_dict())
            return token

        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def set_namespace_quota(self, actor: Actor, namespace: str, *,
                                  max_memories: int | None,
                                  max_bytes: int | None) -> dict[str, Any]:
        namespace = _check_namespace(namespace)
        max_memories, max_bytes = check_quota(max_memories, max_bytes)

        async def write(conn: Conn) -> dict[str, Any]:
            row = await one_row(conn, "limits.set_quota", {
                "namespace": namespace, "max_memories": max_memories, "max_bytes": max_bytes,
                "actor": actor.name[:200]})
            cleared = row["namespace"] is None
            await _audit(conn, actor, "quota.clear" if cleared else "quota.set",
                         detail={"namespace": namespace, "max_memories": max_memories,
                                 "max_bytes": max_bytes})
            if cleared:
                return quota_dict(namespace, None, await one_row(conn, "limits.use",
                                                                 {"namespace": namespace}))
            return quota_dict(namespace, row)

        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def namespace_quota(self, namespace: str) -> dict[str, Any]:
        namespace = _check_namespace(namespace)

        async def read(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "limits.quota", {"namespace": namespace})
            if row is not None:
                return quota_dict(namespace, row)
            return quota_dict(namespace, None,
                              await one_row(conn, "limits.use", {"namespace": namespace}))

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

    async def list_namespace_quotas(self) -> list[dict[str, Any]]:
        async def read(conn: Conn) -> list[dict[str, Any]]:
            rows = await many(conn, "limits.list_quotas", {"limit": MAX_QUOTAS_LISTED})
            return [quota_dict(r["namespace"], r) for r in rows]

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)
