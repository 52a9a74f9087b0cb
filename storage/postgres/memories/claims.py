"""`ClaimStore`: memories' claims about a repository and their verdicts (a PostgresBackend mixin
over `PgCore`; migration 0032, storage/postgres/sql/claims.sql). The checking itself (GitHub)
is a use case (usecases/reconcile.py): storage only says what is due and records verdicts.
"""

from __future__ import annotations

import uuid
from typing import Any

from psycopg.types.json import Jsonb

from ....errors import InvalidInput, NotFound, TooLarge
from ...claims import MAX_RECONCILE_IDS, QUARANTINED, VERDICTS
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...sanitize import wrap_untrusted
from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..rows import Conn, many, one, one_row

DRIFT_LIMIT_MAX = 200
# Cosine distance under which two memories of different text are about one thing: said twice,
# or said two ways (all-MiniLM-L6-v2: "The API runs on port 8080." is 0.057 from "The API
# listens on port 8080." and 0.163 from "The API runs on port 9090."; different decisions on
# one subject, such as plain-text against JSON logs, sit above 0.5).
NEAR_DUPLICATE_DISTANCE = 0.2
# Each namespace's newest memories compared pairwise (500 x 500 distances: tens of ms).
DRIFT_WINDOW = 500


def claim_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("repo", "pr", "branch", "sha") if row.get(k) is not None}


async def insert_claim(conn: Conn, namespace: str, memory_id: Any,
                       claim: dict[str, Any]) -> None:
    """Attach a validated claim to a memory written in this transaction (memory_remember)."""
    await conn.execute(q("claims.insert_claim"), {
        "namespace": namespace, "memory_id": memory_id, "repo": claim["repo"],
        "pr": claim.get("pr"), "branch": claim.get("branch"), "sha": claim.get("sha")})


class ClaimStore(PgCore):
    async def due_claims(self, principal: Principal, namespace: str, ids: list[str] | None,
                         recheck_seconds: float) -> dict[str, list[dict[str, Any]]]:
        check_namespace(principal, namespace, write=False)
        wanted = _check_ids(ids)

        async def body(conn: Conn) -> dict[str, list[dict[str, Any]]]:
            if wanted is None:
                rows = await many(conn, "claims.due_claims", {
                    "namespace": namespace, "recheck": float(recheck_seconds),
                    "limit": MAX_RECONCILE_IDS})
                held = await many(conn, "claims.quarantined_claims",
                                  {"namespace": namespace, "limit": MAX_RECONCILE_IDS})
            else:
                found = await many(conn, "claims.claims_of",
                                   {"namespace": namespace, "ids": wanted})
                missing = set(wanted) - {r["memory_id"] for r in found}
                if missing:
                    raise NotFound("no memory of this namespace with a claim has these ids",
                                   ids=[str(i) for i in wanted if i in missing])
                # A quarantined memory's text may be an injection: its claim must not make
                # the server ask GitHub anything until an operator releases it.
                rows = [r for r in found if not r["quarantined"]]
                held = [r for r in found if r["quarantined"]]
            return {
                "due": [{"memory_id": str(r["memory_id"]), "claim": claim_row(r),
                         "granted": r["granted"]} for r in rows],
                "skipped": [{"memory_id": str(r["memory_id"]), "reason": QUARANTINED}
                            for r in held],
            }

        return await self._run(namespace, body, retry_safe=True)

    async def record_verdicts(self, principal: Principal, namespace: str,
                              verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        check_namespace(principal, namespace, write=True)
        for v in verdicts:
            if v["verdict"] not in VERDICTS:
                raise ValueError(f"unknown verdict {v['verdict']!r}")

        async def body(conn: Conn) -> list[dict[str, Any]]:
            out = []
            for v in verdicts:
                row = await one_row(conn, "claims.insert_verdict", {
                    "namespace": namespace, "memory_id": v["memory_id"],
                    "verdict": v["verdict"], "evidence": Jsonb(v["evidence"]),
                    "source": "reconcile", "observed_at": v.get("observed_at")})
                out.append({"memory_id": str(row["memory_id"]), "verdict": row["verdict"],
                            "evidence": row["evidence"], "checked_at": iso(row["checked_at"])})
            return out

        return await self._run(namespace, body, retry_safe=False)

    async def webhook_verdicts(self, delivery_id: str, event: str, body_sha256: bytes,
                               affected: dict[str, Any]) -> int | None:
        # Every namespace that granted the repository: a delivery names a repository, not a
        # tenant. Nothing is read back to the sender.
        async def body(conn: Conn) -> int | None:
            if await one(conn, "claims.claim_delivery", {
                    "delivery_id": delivery_id, "event": event,
                    "body_sha256": body_sha256}) is None:
                return None
            if "pr" in affected:
                verdict = "current" if affected["merged"] else "stale"
                cur = await conn.execute(q("claims.webhook_pr_verdicts"), {
                    "verdict": verdict, "repo": affected["repo"], "pr": affected["pr"],
                    "observed_at": affected["observed_at"],
                    "evidence": Jsonb({"event": event, "delivery": delivery_id,
                                       **affected.get("evidence", {})})})
                return cur.rowcount
            if "branch" in affected:
                cur = await conn.execute(q("claims.webhook_branch_verdicts"), {
                    "repo": affected["repo"], "branch": affected["branch"],
                    "head_sha": affected["head_sha"].lower(),
                    "observed_at": affected["observed_at"],
                    "evidence": Jsonb({"event": event, "delivery": delivery_id,
                                       "head_sha": affected["head_sha"].lower()})})
                return cur.rowcount
            return 0

        return await self._run(ALL_NAMESPACES, body, retry_safe=False)

    async def drift_scan(self, principal: Principal, namespaces: list[str] | None, *,
                         limit: int) -> dict[str, Any]:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= \
                DRIFT_LIMIT_MAX:
            raise InvalidInput(f"limit must be 1-{DRIFT_LIMIT_MAX}", field="limit")
        for namespace in namespaces or []:
            check_namespace(principal, namespace, write=False)
        semantic = self._model_ready()
        model = self._model_name() if semantic else ""
        params = {"namespaces": namespaces, "limit": limit, "model": model,
                  "close": NEAR_DUPLICATE_DISTANCE, "window": DRIFT_WINDOW}

        async def body(conn: Conn) -> dict[str, Any]:
            pairs = await many(conn, "claims.drift_near_duplicates" if semantic
                               else "claims.drift_same_title", params)
            stale = await many(conn, "claims.drift_stale_claims", params)
            contradictions = await many(conn, "claims.drift_contradictions", params)
            return {
                "near_duplicates": [{
                    "namespace": r["namespace"], "older_id": str(r["older_id"]),
                    "newer_id": str(r["newer_id"]),
                    "older_title": wrap_untrusted(r["older_title"]),
                    "newer_title": wrap_untrusted(r["newer_title"]),
                    "distance": None if r["distance"] is None else round(r["distance"], 4),
                } for r in pairs],
                "near_duplicates_by": "meaning" if semantic else "title (no model loaded)",
                "stale_claims": [{
                    "namespace": r["namespace"], "id": str(r["id"]),
                    "title": wrap_untrusted(r["title"]), "claim": r["claim"],
                } for r in stale],
                "contradictions": [{
                    "namespace": r["namespace"], "older_id": str(r["older_id"]),
                    "older_kind": r["older_kind"], "decision_id": str(r["decision_id"]),
                    "older_title": wrap_untrusted(r["older_title"]),
                    "decision_title": wrap_untrusted(r["decision_title"]),
                    "shared_tags": list(r["shared_tags"] or []),
                } for r in contradictions],
            }

        scope = namespaces if namespaces is not None else ALL_NAMESPACES
        found = await self._run(scope, body, retry_safe=True)
        found["namespaces"] = namespaces if namespaces is not None else "all"
        found["limit"] = limit
        return found


def _check_ids(ids: Any) -> list[uuid.UUID] | None:
    if ids is None:
        return None
    if not isinstance(ids, list):
        raise InvalidInput("ids must be a list of memory ids", field="ids")
    if len(ids) > MAX_RECONCILE_IDS:
        raise TooLarge(f"ids names at most {MAX_RECONCILE_IDS} memories", field="ids",
                       limit=MAX_RECONCILE_IDS)
    out = []
    for value in ids:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            raise InvalidInput(f"not a memory id: {str(value)[:64]!r}", field="ids") from None
    return out
