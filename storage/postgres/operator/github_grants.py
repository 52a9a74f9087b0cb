"""`GitHubGrantStore`: which GitHub repositories each namespace may have its claims checked
against, granted by the operator (migration 0035; docs/claims.md). A tenant's token never
changes them: the table is read-only to memhub_app, and its one writer,
memhub_github_grant, refuses any transaction not scoped to every namespace."""

from __future__ import annotations

from typing import Any

from ....errors import InvalidInput
from ...admin import Actor
from ...claims import check_repo
from ...memory_dicts import iso
from ...principal import NAMESPACE_RE
from ..core import ALL_NAMESPACES, PgCore
from ..rows import Conn, many, one_row
from .admin import _audit

MAX_GRANTS_LISTED = 1000


def _check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput("namespace must be 1-64 chars of a-z, 0-9, '.', '_' or '-'",
                           field="namespace")
    return namespace


class GitHubGrantStore(PgCore):
    async def grant_repo(self, actor: Actor, namespace: str, repo: str, *,
                         allow: bool) -> dict[str, Any]:
        namespace = _check_namespace(namespace)
        repo = check_repo(repo, "repo").lower()

        async def write(conn: Conn) -> dict[str, Any]:
            row = await one_row(conn, "github_grants.change", {
                "namespace": namespace, "repo": repo, "allow": allow, "actor": actor.name[:200]})
            await _audit(conn, actor, "github.allow" if allow else "github.deny",
                         detail={"namespace": namespace, "repo": repo,
                                 "changed": row["changed"]})
            return {"namespace": namespace, "repo": repo, "allowed": allow,
                    "changed": row["changed"]}

        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def list_repo_grants(self, namespace: str | None = None) -> list[dict[str, Any]]:
        if namespace is not None:
            namespace = _check_namespace(namespace)

        async def read(conn: Conn) -> list[dict[str, Any]]:
            rows = await many(conn, "github_grants.list",
                              {"namespace": namespace, "limit": MAX_GRANTS_LISTED})
            return [{"namespace": r["namespace"], "repo": r["repo"],
                     "granted_by": r["granted_by"], "granted_at": iso(r["granted_at"])}
                    for r in rows]

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)
