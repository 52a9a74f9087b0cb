"""`HealthStore`: `coord_health`, one report of what in a namespace needs attention, and the
observation totals `stats` and the dashboard show (a PostgresBackend mixin over `PgCore`).

Each section is read in a transaction of its own: a section that fails reports
{"status": "degraded", "error": code} and the others are still answered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ....errors import MemhubError
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ..memories.trust import TrustStore, observation_dict
from ..retrieval.lexicon import due_in
from ..rows import Conn, many, one

logger = logging.getLogger(__name__)

# An open handoff older than this is reported as waiting too long (a constant: a handoff is
# meant to be taken by the next session, within a working day or a weekend).
HANDOFF_OLD_HOURS = 72
SECTION_LIMIT = 10  # items listed per section; the totals count them all


class HealthStore(TrustStore):
    """Implements `TrustBackend.coord_health` and `observation_totals`."""

    async def coord_health(self, principal: Principal, namespace: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        ns = {"namespace": namespace, "limit": SECTION_LIMIT}

        async def reverification() -> dict[str, Any]:
            due = await self.reverification_due(principal, namespace, limit=SECTION_LIMIT)
            return {"total": due["total"], "memories": [
                {"id": m["id"], "kind": m["kind"], "title": m["title"],
                 "last_verified_or_revised_at": m["last_verified_or_revised_at"]}
                for m in due["memories"]]}

        async def handoffs(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, "trust.old_open_handoffs",
                              {**ns, "hours": HANDOFF_OLD_HOURS})
            return {"older_than_hours": HANDOFF_OLD_HOURS,
                    "total": rows[0]["total"] if rows else 0,
                    "handoffs": [{"id": str(r["id"]), "for_surface": r["for_surface"],
                                  "author_client": r["author_client"],
                                  "created_at": iso(r["created_at"])} for r in rows]}

        async def embedding(conn: Conn) -> dict[str, Any]:
            return dict(await one(conn, "trust.embedding_jobs", ns) or {})

        async def quarantined(conn: Conn) -> dict[str, Any]:
            return dict(await one(conn, "trust.quarantined", ns) or {})

        async def observations(conn: Conn) -> dict[str, Any]:
            rows = await many(conn, "trust.open_observations", ns)
            return {"open": rows[0]["total"] if rows else 0,
                    "observations": [observation_dict(r) for r in rows]}

        async def lexicon(conn: Conn) -> dict[str, Any]:
            due = await due_in(conn, [namespace])
            return {"due": bool(due), "new_memories": due[0]["new"] if due else 0}

        sections: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
            "reverification": reverification,
            "old_handoffs": self._section(namespace, handoffs),
            "embedding_jobs": self._section(namespace, embedding),
            "quarantined": self._section(namespace, quarantined),
            "observations": self._section(namespace, observations),
            "word_statistics": self._section(namespace, lexicon),
        }
        report: dict[str, Any] = {"namespace": namespace}
        attention = []
        for name, read in sections.items():
            try:
                report[name] = {"status": "ok", **await read()}
            except MemhubError as err:
                logger.warning("coord_health section failed",
                               extra={"section": name, "code": err.code})
                report[name] = {"status": "degraded", "error": err.code}
                attention.append(name)
                continue
            if _needs_attention(name, report[name]):
                attention.append(name)
        report["needs_attention"] = attention
        return report

    def _section(self, namespace: str, fn: Callable[[Conn], Awaitable[dict[str, Any]]]
                 ) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def read() -> dict[str, Any]:
            return await self._run(namespace, fn, retry_safe=True)
        return read

    async def observation_totals(self, namespaces: list[str] | None = None
                                 ) -> dict[str, dict[str, int]]:
        """{namespace: {"total", "open"}} of observations, in `namespaces` (None: every one)."""
        async def read(conn: Conn) -> dict[str, dict[str, int]]:
            rows = await many(conn, "trust.observation_totals", {"namespaces": namespaces})
            return {r["namespace"]: {"total": r["total"], "open": r["open"]} for r in rows}

        return await self._run(namespaces if namespaces is not None else "*", read,
                               retry_safe=True)


def _needs_attention(name: str, section: dict[str, Any]) -> bool:
    if name in ("reverification", "old_handoffs"):
        return section["total"] > 0
    if name == "embedding_jobs":
        return section.get("dead", 0) > 0
    if name == "quarantined":
        return any(v for k, v in section.items() if k != "status")
    if name == "observations":
        return section["open"] > 0
    return bool(section.get("due"))
