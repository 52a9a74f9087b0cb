"""`CurationStore`: the curator's reads (a PostgresBackend mixin over `PgCore`)."""

from __future__ import annotations

from typing import Any

from ...curation import MAX_CURATED
from ...principal import Principal, check_namespace
from ...work_input import parse_uuid
from ..core import PgCore
from ..rows import Conn, many


class CurationStore(PgCore):
    """Implements `CurationBackend`."""

    async def curated_from_session(
        self, principal: Principal, namespace: str, session_id: str
    ) -> list[dict[str, Any]]:
        check_namespace(principal, namespace, write=False)
        sid = parse_uuid(session_id, "session_id")

        async def read(conn: Conn) -> list[dict[str, Any]]:
            rows = await many(conn, "curation.curated_from_session", {
                "namespace": namespace, "session_id": str(sid), "limit": MAX_CURATED})
            return [{"id": str(r["id"]), "status": r["status"], "kind": r["kind"]}
                    for r in rows]

        return await self._run(namespace, read, retry_safe=True)
