"""`GateStore`: the intent gate on PostgreSQL (a PostgresBackend mixin over `RecallStore`;
migration 0033, docs/intent-gate.md).

Two-phase writes. `gate_preview` runs before a supersede or forget: in a namespace whose
profile has `intent_gate: "on"`, a call without `confirmation` writes nothing and answers a
preview with a signed, short-lived token bound to the exact arguments (storage/gate_confirm.py).
The write that brings it back verifies it and spends its nonce in its own transaction
(storage/postgres/memories/retire_gate.py), which is also where a retiring write without one is
refused, whoever calls it. Namespaces with the gate off never see any of it.

Skills are bounded per namespace (gate_input.SKILLS_MAX), and so is what intent_open returns of
their guidance (gate_input.select_guidance).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ....config import Settings
from ....errors import Conflict, InvalidInput, NotFound, QuotaExceeded
from ... import gate_confirm
from ... import memory_input as mi
from ...gate_input import (
    SKILLS_MAX,
    TRIGGERS_BYTES_MAX,
    check_guidance,
    check_intent,
    check_outcome,
    check_skill_name,
    check_skill_version,
    check_trigger,
    lookup_text,
    select_guidance,
)
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ..idempotency import IdempotentWrites
from ..memories.retire_gate import RetireGate
from ..queries import q
from ..retrieval.recall import RecallStore
from ..rows import Conn, many, one, one_row
from .gate_cache import GateCache, GateEntry

if TYPE_CHECKING:
    from ....embedding.embedder import Embedder

INTENT_LIMIT_MAX = 50


def _fresh(row: dict[str, Any]) -> dict[str, Any]:
    out = {"id": str(row["id"]), "kind": row["kind"], "title": row["title"],
           "status": row["status"], "updated_at": iso(row["updated_at"]),
           "updated_age_seconds": row["updated_age_seconds"],
           "last_verified_at": iso(row["last_verified_at"])}
    if row.get("relation"):
        out["relation"] = row["relation"]
    return out


def _skill(row: dict[str, Any]) -> dict[str, Any]:
    return {"name": row["name"], "trigger": row["trigger"], "guidance": row["guidance"],
            "version": row["version"], "updated_at": iso(row["updated_at"])}


class GateStore(RecallStore, RetireGate, IdempotentWrites):
    """Implements `GateBackend`: intent_open reads through `recall`, confirmations are signed
    with the key the retiring writes check them with (RetireGate)."""

    def __init__(self, settings: Settings, dsn: str, *, embedder: Embedder | None = None
                 ) -> None:
        super().__init__(settings, dsn, embedder=embedder)
        self._gate_cache_made: GateCache | None = None

    @property
    def _gate_cache(self) -> GateCache:
        """This process's cache of each namespace's gate, made on first use (with LISTEN where
        `listen_dsn` then allows it)."""
        if self._gate_cache_made is None:
            self._gate_cache_made = GateCache(self.settings.gate_cache_ttl_seconds,
                                              self.listen_dsn)
        return self._gate_cache_made

    async def close(self) -> None:
        if self._gate_cache_made is not None:
            await self._gate_cache_made.stop()
        await super().close()

    async def _gate_entry(self, namespace: str) -> GateEntry:
        async def load() -> GateEntry:
            async def read(conn: Conn) -> GateEntry:
                profile = await one(conn, "gate.gate_profile", {"namespace": namespace})
                # Within the limits: a namespace that held more before they existed has its
                # first skills by name applied, never an unbounded amount of work per call.
                skills = await many(conn, "gate.skills", {
                    "namespace": namespace, "limit": SKILLS_MAX, "bytes": TRIGGERS_BYTES_MAX})
                return GateEntry(
                    gate_on=bool(profile and profile["intent_gate"] == "on"),
                    tier2=bool(profile and profile["tier2"] == "on"),
                    profile_version=profile["version"] if profile else 0,
                    skills=tuple(_skill(s) for s in skills))
            return await self._run(namespace, read, retry_safe=True)
        return await self._gate_cache.get(namespace, load)

    # --- two-phase writes -----------------------------------------------------------------
    async def gate_preview(self, principal: Principal, namespace: str, tool: str,
                           arguments: dict[str, Any], *, targets: list[str],
                           fresh: bool = False) -> dict[str, Any] | None:
        check_namespace(principal, namespace, write=True)
        if fresh:
            self._gate_cache.invalidate(namespace)
        if not (await self._gate_entry(namespace)).gate_on:
            return None
        ids = ([mi.parse_id(t) for t in targets] if tool == "memory_forget"
               else mi.check_supersedes(targets))

        async def read(conn: Conn) -> tuple[list[dict], list[dict]]:
            params = {"namespace": namespace, "ids": ids}
            found = await many(conn, "gate.preview_targets", params)
            deps = await many(conn, "gate.preview_dependents",
                              {**params, "ids": [str(i) for i in ids]})
            return found, deps

        found, deps = await self._run(namespace, read, retry_safe=True)
        becomes = "SUPERSEDED" if tool == "memory_remember" else "DELETED"
        known = {str(r["id"]) for r in found}
        return {
            "outcome": "preview",
            "written": False,
            "tool": tool,
            "would_change": [{**_fresh(r), "becomes": becomes,
                              "applicable": r["status"] == "ACTIVE"} for r in found],
            "missing": [str(i) for i in ids if str(i) not in known],
            "dependents": [_fresh(r) for r in deps],
            "confirmation": gate_confirm.issue(await self._gate_secret(), namespace,
                                               principal.token_id, tool, arguments),
            "expires_in_seconds": self.settings.gate_confirm_ttl_seconds,
            "verified_persisted": False,
        }

    # --- intents --------------------------------------------------------------------------
    async def intent_open(self, principal: Principal, namespace: str, intent: Any, *,
                          limit: int = 10, also: list[str] | None = None) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        clean = check_intent(intent)
        if isinstance(limit, bool) or not isinstance(limit, int) \
                or not 1 <= limit <= INTENT_LIMIT_MAX:
            raise InvalidInput(f"limit must be 1-{INTENT_LIMIT_MAX}", field="limit")
        lookup = lookup_text(clean["text"])
        found = await self.recall(principal, namespace, lookup, limit=limit, also=also)
        entry = await self._gate_entry(namespace)
        guidance, omitted = select_guidance(entry.skills, clean)

        async def write(conn: Conn) -> dict[str, Any]:
            return await one_row(conn, "gate.insert_intent", {
                "namespace": namespace, **clean, "opened_by": principal.surface})

        row = await self._run(namespace, write, retry_safe=False)
        answer = {
            "intent_id": str(row["id"]), "opened_at": iso(row["opened_at"]),
            "memories": [r for r in found["results"] if r["memory"]["status"] == "ACTIVE"],
            "answered": found["answered"], "degraded": found["degraded"],
            "guidance": guidance, "intent_gate": "on" if entry.gate_on else "off",
        }
        if omitted is not None:
            answer["guidance_omitted"] = omitted
        if len(lookup) < len(clean["text"]):
            answer["lookup_chars"] = len(lookup)
        return answer

    async def gate_close_outcome(self, principal: Principal, namespace: str, intent_id: str,
                                 outcome: str, *,
                                 client_request_id: str | None = None) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        iid = mi.parse_id(intent_id, field="intent_id")
        text = check_outcome(outcome)
        request_id = mi.check_request_id(client_request_id)

        async def body(conn: Conn) -> dict[str, Any]:
            ids = {"namespace": namespace, "id": iid}
            row = await one(conn, "gate.close_intent", {**ids, "outcome": text,
                                                        "closed_by": principal.surface})
            if row is None:
                now = await one(conn, "gate.intent", ids)
                if now is None:
                    raise NotFound(f"no intent {iid} in namespace {namespace!r}")
                raise Conflict("this intent already has an outcome, recorded once; nothing "
                               "was written",
                               remedy="Read details (the outcome recorded, by whom and when); "
                                      "open a new intent for a new attempt.",
                               **_intent(now))
            return {"outcome": "closed", "intent": _intent(row)}

        return await self._idempotent_write(principal, namespace, request_id, "gate_close",
                                            {"intent_id": str(iid), "outcome": outcome}, body)

    # --- skills ---------------------------------------------------------------------------
    async def skill_define(self, principal: Principal, namespace: str, name: str,
                           trigger: Any, guidance: str, *,
                           expected_version: int | None = None) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        clean_name = check_skill_name(name)
        rule = check_trigger(trigger)
        text = check_guidance(guidance)
        expected = check_skill_version(expected_version)
        params = {"namespace": namespace, "name": clean_name, "trigger": Jsonb(rule),
                  "guidance": text, "updated_by": principal.surface, "expected": expected}
        block = {None: "gate.upsert_skill", 0: "gate.insert_skill"}.get(expected,
                                                                        "gate.update_skill_cas")

        async def write(conn: Conn) -> dict[str, Any]:
            # Held to COMMIT: two new skills cannot both take the namespace's last place.
            await conn.execute(q("gate.lock_skills"), {"namespace": namespace})
            _check_room(namespace, await one_row(conn, "gate.skills_beside", {
                "namespace": namespace, "name": clean_name, "trigger": Jsonb(rule)}))
            row = await one(conn, block, params)
            if row is not None:
                return {"outcome": "created" if row["inserted"] else "updated",
                        "skill": _skill(row)}
            now = await one(conn, "gate.skill_now", params)
            # Checked before the version: a retry of a definition that did commit finds it
            # there, one version on, and is told "unchanged" rather than CONFLICT.
            if now is not None and (now["same"] or expected is None):
                return {"outcome": "unchanged", "skill": _skill(now)}
            version = now["version"] if now is not None else 0
            raise Conflict(
                f"skill {clean_name!r} is at version {version}, not {expected}; nothing was "
                "written",
                remedy="Read details (the skill as it is now), decide, and define it again "
                       "with expected_version = details.current_version.",
                name=clean_name, current_version=version,
                **({"current_trigger": now["trigger"], "current_guidance": now["guidance"],
                    "updated_by": now["updated_by"], "updated_at": iso(now["updated_at"])}
                   if now is not None else {}))

        result = await self._run(namespace, write, retry_safe=True)
        # This process need not wait for its own NOTIFY.
        self._gate_cache.invalidate(namespace)
        return result

    async def skill_get(self, principal: Principal, namespace: str,
                        name: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        clean_name = check_skill_name(name)

        async def read(conn: Conn) -> dict[str, Any] | None:
            return await one(conn, "gate.skill", {"namespace": namespace, "name": clean_name})

        row = await self._run(namespace, read, retry_safe=True)
        if row is None:
            raise NotFound(f"no skill {clean_name!r} in namespace {namespace!r}")
        return {"skill": _skill(row)}

    async def gate_cache_status(self, principal: Principal, namespace: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)
        cache = self._gate_cache
        entry = cache.peek(namespace)
        out: dict[str, Any] = {
            "namespace": namespace, "cached": entry is not None,
            "ttl_seconds": cache.ttl, "listening": cache.listening,
            "invalidations": cache.invalidations,
        }
        if entry is not None:
            out.update({
                "intent_gate": "on" if entry.gate_on else "off",
                "profile_version": entry.profile_version,
                "skills": [{"name": s["name"], "version": s["version"]}
                           for s in entry.skills],
                "loaded_at": iso(entry.loaded_at),
                "age_seconds": round(time.monotonic() - entry.loaded_mono, 3),
            })
        return out


def _check_room(namespace: str, held: dict[str, Any]) -> None:
    """QUOTA_EXCEEDED when the definition would take the namespace past a limit: a new skill
    past SKILLS_MAX, or triggers that would total more than TRIGGERS_BYTES_MAX (a trigger that
    does not grow is always accepted, so a namespace over the limits can still be edited)."""
    if not held["exists"] and held["others"] >= SKILLS_MAX:
        raise QuotaExceeded(
            f"namespace {namespace!r} holds {SKILLS_MAX} skills, the most it may; nothing was "
            "stored", field="name", limit=SKILLS_MAX,
            remedy="Update an existing skill instead (skill_define with its name): one "
                   "trigger can cover several cases with or / contains.")
    if held["bytes"] > held["bytes_now"] \
            and held["others_bytes"] + held["bytes"] > TRIGGERS_BYTES_MAX:
        raise QuotaExceeded(
            f"the namespace's triggers would total {held['others_bytes'] + held['bytes']} "
            f"bytes, over its {TRIGGERS_BYTES_MAX}; nothing was stored", field="trigger",
            limit=TRIGGERS_BYTES_MAX,
            remedy="Use a shorter trigger, or shorten or merge other skills' triggers.")


def _intent(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "opened_at": iso(row["opened_at"]),
            "outcome": row["outcome"], "closed_by": row["closed_by"],
            "closed_at": iso(row["closed_at"])}

