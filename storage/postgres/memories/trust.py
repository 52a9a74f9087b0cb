"""`TrustStore`: what tells a client how far to trust a memory (a PostgresBackend mixin over
`PgCore`; migration 0029): provenance on writes, `memory_verify`, `observation_log` and the
re-verification list.

Acks. A write's answer leaves this module only after its transaction's COMMIT returned
without error (`PgCore._run` returns once `conn.transaction()` has exited), so
`verified_persisted: true` needs no read-back: PostgreSQL acknowledges a COMMIT only after the
commit record is flushed to its write-ahead log, as long as `synchronous_commit` is not `off`
(the server's setting is read once and cached; with `off` the ack says false). A connection
lost while COMMIT was in flight is UNKNOWN_OUTCOME, never an ack: the client replays its
client_request_id, and the replay's answer is read back from the committed idempotency record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from ....errors import Conflict, InvalidInput, NotFound, TooLarge
from ... import memory_input as mi
from ...memory_dicts import effective_status, iso, memory_dict, memory_now
from ...principal import Principal, check_namespace
from ...sanitize import sanitize_text, screen, wrap_untrusted
from ...trust import OBSERVATION_KINDS
from ..idempotency import IdempotentWrites
from ..rows import Conn, many, one, one_row

OBSERVATION_TEXT_MAX = 2000
OBSERVATION_REFS_MAX = 20
DUE_LIMIT_MAX = 200
# Outcomes whose state is what the answer says it is, once committed (a write that did not
# apply is an error, never an answer).
_WRITTEN = frozenset({"created", "deduplicated", "revised", "forgotten", "already_forgotten",
                      "verified", "logged"})


def persisted(result: dict[str, Any], durable: bool = True) -> dict[str, Any]:
    """The answer of a committed write with its ack (see the module docstring)."""
    outcome = result.get("original_outcome") or result.get("outcome")
    result["verified_persisted"] = durable and outcome in _WRITTEN
    return result


@dataclass(frozen=True)
class Provenance:
    """A write's provenance, validated before any connection is taken."""

    origin: str | None
    model: str | None
    client_info: str | None
    derived_from: list[dict[str, str]] | None
    given: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, origin: Any, model: Any, derived_from: Any, client_info: Any, *,
           default: str | None) -> Provenance:
        given = tuple((k, v) for k, v in (("origin", origin), ("model", model),
                                           ("derived_from", derived_from)) if v is not None)
        return cls(mi.check_origin(origin, default=default),
                   mi.check_label(model, "model", mi.MAX_MODEL),
                   mi.check_label(client_info, "client_info", mi.MAX_CLIENT_INFO),
                   mi.check_derived_from(derived_from), given)

    def payload(self) -> dict[str, Any]:
        """What a client_request_id is bound to: the provenance arguments the client gave
        (none given: the request hashes as it did before provenance existed). Not the
        transport's client_info: a retry from a reconnected client is the same request."""
        return dict(self.given)

    def columns(self) -> dict[str, Any]:
        return {"origin": self.origin, "model": self.model, "client_info": self.client_info,
                "derived_from": Jsonb(self.derived_from) if self.derived_from is not None
                else None}

    async def check(self, conn: Conn, namespace: str) -> None:
        """Every derived_from entry names a record of `namespace`; NOT_FOUND lists the others."""
        if not self.derived_from:
            return
        missing = await many(conn, "trust.missing_sources", {
            "namespace": namespace, "types": [r["type"] for r in self.derived_from],
            "ids": [r["id"] for r in self.derived_from]})
        if missing:
            raise NotFound(
                f"derived_from names records that do not exist in namespace {namespace!r}",
                remedy="Name only memories, sessions, handoffs or artifacts of this namespace.",
                field="derived_from",
                missing=[{"type": r["type"], "id": str(r["id"])} for r in missing])


async def observation_counts(conn: Conn, namespace: str, memory_id: Any) -> dict[str, int]:
    """{"total", "open"}: how many observations name this memory, and how many are unaddressed."""
    row = await one(conn, "trust.observation_counts_of", {"namespace": namespace, "id": memory_id})
    return {"total": row["total"], "open": row["open"]} if row else {"total": 0, "open": 0}


def observation_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "kind": row["kind"], "text": wrap_untrusted(row["text"]),
            "refs": [str(r) for r in row["refs"]], "author_client": row["author_client"],
            "quarantined": row["quarantined"],
            "quarantine_reasons": list(row["quarantine_reasons"]),
            "created_at": iso(row["created_at"])}


def _observation_text(text: Any) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string", field="text")
    if len(text) > OBSERVATION_TEXT_MAX:
        raise TooLarge(f"text is longer than {OBSERVATION_TEXT_MAX} characters", field="text",
                       limit=OBSERVATION_TEXT_MAX)
    cleaned = sanitize_text(text).strip()
    if not cleaned:
        raise InvalidInput("text must not be empty", field="text")
    return cleaned


def _refs(refs: Any) -> list[Any]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        raise InvalidInput("refs must be a list of memory ids", field="refs")
    if len(refs) > OBSERVATION_REFS_MAX:
        raise TooLarge(f"refs names at most {OBSERVATION_REFS_MAX} memories", field="refs",
                       limit=OBSERVATION_REFS_MAX)
    return list(dict.fromkeys(mi.parse_id(r, "refs") for r in refs))


class TrustStore(IdempotentWrites):
    """Implements `TrustBackend` (storage/trust.py)."""

    async def verify_memory(self, principal: Principal, namespace: str, memory_id: str, *,
                            client_request_id: str | None = None) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        ids = {"namespace": namespace, "id": mi.parse_id(memory_id)}
        request_id = mi.check_request_id(client_request_id)

        async def write(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "trust.lock_memory", ids)
            if row is None:
                raise NotFound(f"no memory {ids['id']} in namespace {namespace!r}")
            if row["status"] != "ACTIVE" or row["past_expiry"]:
                now = await one_row(conn, "memories.current_revision_of", ids)
                raise Conflict(
                    f"memory is {effective_status(row)}; only ACTIVE memories are verified",
                    remedy="Verify its successor (details.superseded_by), or remember it anew.",
                    **memory_now(now))
            done = await one(conn, "trust.insert_verification", {
                "namespace": namespace, "memory_id": ids["id"],
                "revision": row["current_revision"], "verified_by": principal.surface})
            assert done is not None
            return {"outcome": "verified", "memory": memory_dict(row),
                    "verification": {"revision": done["revision"],
                                     "verified_by": done["verified_by"],
                                     "verified_at": iso(done["verified_at"])}}

        answer = await self._idempotent_write(principal, namespace, request_id, "verify",
                                              {"id": str(ids["id"])}, write)
        return persisted(answer, await self.durable_commits())

    async def observation_log(self, principal: Principal, namespace: str, kind: str,
                              text: str, refs: list[str] | None = None, *,
                              client_request_id: str | None = None) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        if kind not in OBSERVATION_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(OBSERVATION_KINDS)}",
                               field="kind")
        clean = _observation_text(text)
        memory_ids = _refs(refs)
        request_id = mi.check_request_id(client_request_id)
        screening = screen(clean)

        async def write(conn: Conn) -> dict[str, Any]:
            if memory_ids:
                missing = await many(conn, "trust.missing_memories",
                                     {"namespace": namespace, "ids": memory_ids})
                if missing:
                    raise NotFound(
                        f"refs names memories that do not exist in namespace {namespace!r}",
                        field="refs", missing=[str(r["id"]) for r in missing])
            row = await one(conn, "trust.insert_observation", {
                "namespace": namespace, "kind": kind, "text": clean, "refs": memory_ids,
                "author": principal.surface, "quarantined": screening.quarantined,
                "reasons": list(screening.reasons)})
            assert row is not None
            return {"outcome": "logged", "observation": observation_dict(row),
                    "quarantine": screening.as_dict()}

        payload = {"kind": kind, "text": text, "refs": [str(r) for r in memory_ids]}
        answer = await self._idempotent_write(principal, namespace, request_id, "observe",
                                              payload, write)
        return persisted(answer, await self.durable_commits())

    async def reverification_due(self, principal: Principal, namespace: str, *,
                                 limit: int = 20) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        if isinstance(limit, bool) or not isinstance(limit, int) \
                or not 1 <= limit <= DUE_LIMIT_MAX:
            raise InvalidInput(f"limit must be between 1 and {DUE_LIMIT_MAX}", field="limit")

        async def read(conn: Conn) -> list[dict[str, Any]]:
            return await many(conn, "trust.reverification_due",
                              {"namespace": namespace, "limit": limit})

        rows = await self._run(namespace, read, retry_safe=True)
        return {"memories": [{**memory_dict(r), "last_verified_or_revised_at": iso(r["fresh_at"]),
                              "reverify_days": r["days"]} for r in rows],
                "total": rows[0]["total"] if rows else 0}
