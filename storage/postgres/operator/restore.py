"""Import an export file (storage/transfer_format.py) into a namespace, in ONE transaction.

The file has been scanned first (`transfer_format.scan`: header version, record order, end
record, counts and SHA-256), so a file cut short or from a newer memhub is refused before
this opens a connection. Then every record is checked (storage/transfer_records.py) and
written in the same transaction: an error anywhere, a conflict or a lost connection rolls
everything back, and the namespace is as it was.

Which path writes: the connection memhub-admin already has (DATABASE_URL's role, or the
embedded cluster's superuser), which owns the tables. It writes as that role, not as
`memhub_app`, because only an owner may ask the insert guards to stand aside
(`memhub.restoring`, migration 0025) so that ids, statuses, revision numbers and database
times are kept as the file has them; `memhub_app` asking the same is ignored. The transaction
is still confined to the target namespace by row-level security (forced on the owner too,
unless it is a superuser) and every statement names it.

Beyond each record's own checks: every blob's bytes are hashed and counted, even when this
database holds that content already (restore_blobs.py says why), and every derived_from entry
must name a record of the target namespace (the file's included), as memory_remember
requires.

A record a purge removed from the target namespace (its tombstone, migration 0023) is never
brought back: the import is refused (CONFLICT) and names it.

Idempotent: a record whose id is already in the namespace is compared with what an export of
it would write now; equal is left alone, different refuses the whole import (CONFLICT),
never merged. An id another namespace of this database holds is refused too (CONFLICT,
pointing at --namespace, which gives the records ids of their own).

After the records, when any was new: an embedding job for every live memory of the namespace
without a current vector, and the namespace's word statistics marked due. No vector or word
count is read from the file. A second import of the same file writes nothing at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import errors as pg
from psycopg.rows import dict_row

from ....errors import Conflict, Forbidden, InvalidInput, MemhubError, NotFound
from ...transfer_format import DAMAGED, Remap, Scan, records
from ...transfer_records import (
    artifact_record,
    check_artifact,
    check_event,
    check_handoff,
    check_memory,
    check_profile_record,
    check_session,
    event_record,
    handoff_record,
    session_record,
)
from ..errors import translate
from ..memories.profiles import restore_profile
from ..queries import q
from ..rows import Conn, many, one_row
from .restore_blobs import BlobRestore
from .restore_rows import insert_row, memory_rows
from .transfer import memory_records

BATCH = 500


def same_memory(held: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether a memory already in the namespace (its export record) is the file's record: a
    file written before retired_at (0045) says nothing of it."""
    if "retired_at" not in record:
        held = {k: v for k, v in held.items() if k != "retired_at"}
    return held == record

# Flushed in this order: a session before its events, everything before nothing else. The
# profile is written as it is read (one record, first).
KINDS = ("profile", "memory", "handoff", "session", "session_event", "artifact")
REFUSED = ("Nothing was imported. Import into a namespace that does not hold these records "
           "(--namespace NEW), or remove what is there first.")

# The insert of each record kind but memories (which insert their nested rows too).
INSERT_BLOCKS = {"handoff": "transfer.insert_handoff", "session": "transfer.insert_session",
                 "session_event": "transfer.insert_event", "artifact": "transfer.insert_artifact"}


class _Restore:
    """The records of one import, checked, batched and written on one connection."""

    def __init__(self, conn: Conn, target: str, remap: Remap,
                 max_chars: int) -> None:
        self.conn = conn
        self.ns = target
        self.remap = remap
        self.max_chars = max_chars
        self.pending: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        self.created = dict.fromkeys(KINDS, 0)
        self.unchanged = dict.fromkeys(KINDS, 0)
        self.blobs = BlobRestore(conn)
        self.session: dict[str, Any] | None = None
        # (line, memory id, derived_from) of each memory naming a source: checked once every
        # record of the file is written, so an entry may name one that comes later.
        self.sources: list[tuple[int, str, list[dict[str, str]]]] = []

    # --- records --------------------------------------------------------------------------
    def check(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        kind = rec["record"]
        if kind == "memory":
            return check_memory(rec, self.remap, self.max_chars)
        if kind == "handoff":
            return check_handoff(rec, self.remap)
        if kind == "session":
            self._close_session()
            record = check_session(rec, self.remap)
            self.session = {"id": record["id"], "next_seq": record["next_seq"], "seen": 0}
            return record
        if kind == "session_event":
            record = check_event(rec, self.remap)
            if self.session is None or record["session_id"] != self.session["id"] \
                    or record["seq"] != self.session["seen"] + 1:
                raise InvalidInput("a session's events follow it, numbered 1, 2, ... in order",
                                   remedy=DAMAGED)
            self.session["seen"] += 1
            return record
        if kind == "artifact":
            record = check_artifact(rec, self.remap)
            if self.blobs.sizes.get(record["sha256"]) != record["size"]:
                raise InvalidInput("an artifact follows its content's blob and has its size",
                                   remedy=DAMAGED)
            return record
        return None

    async def add(self, number: int, rec: dict[str, Any]) -> None:
        kind = rec["record"]
        try:
            if kind != "blob_chunk":
                await self.blobs.end()
            if kind == "blob":
                await self.blobs.begin(rec)
            elif kind == "blob_chunk":
                await self.blobs.chunk(rec)
            elif kind == "profile":
                made = await restore_profile(self.conn, self.ns, check_profile_record(rec))
                (self.created if made else self.unchanged)["profile"] += 1
            else:
                record = self.check(rec)
                assert record is not None
                if kind == "memory" and record["derived_from"]:
                    self.sources.append((number, record["id"], record["derived_from"]))
                self.pending[kind].append(record)
        except MemhubError as err:
            raise type(err)(f"line {number}: {err.message}", remedy=err.remedy,
                            **{**err.details, "line": number}) from err
        if len(self.pending.get(kind, ())) >= BATCH:
            await self.flush()

    async def finish(self) -> None:
        await self.blobs.end()
        self._close_session()
        await self.flush()
        await self._check_sources()

    async def _check_sources(self) -> None:
        """Every derived_from entry names a record of the target namespace, the file's now
        written with it, as memory_remember checks it: NOT_FOUND names the first memory that
        names anything else (another namespace's record, or nothing)."""
        if not self.sources:
            return
        entries = [d for _, _, refs in self.sources for d in refs]
        missing = {(m["type"], str(m["id"])) for m in await many(
            self.conn, "trust.missing_sources", {
                "namespace": self.ns, "types": [d["type"] for d in entries],
                "ids": [d["id"] for d in entries]})}
        for number, memory_id, refs in self.sources:
            if absent := [d for d in refs if (d["type"], d["id"]) in missing]:
                raise NotFound(
                    f"line {number}: memory {memory_id}'s derived_from names records that are "
                    f"neither in the file nor in namespace {self.ns!r}",
                    remedy="Nothing was imported. derived_from names only records of the "
                           "namespace, as memory_remember requires: remove the entries from "
                           "the file, or import the records they name first.",
                    line=number, field="derived_from", missing=absent[:20])

    def _close_session(self) -> None:
        if self.session is not None and self.session["seen"] != self.session["next_seq"]:
            raise InvalidInput(f"session {self.session['id']} counts "
                               f"{self.session['next_seq']} events but the file holds "
                               f"{self.session['seen']}", remedy=DAMAGED)
        self.session = None

    # --- writing --------------------------------------------------------------------------
    async def flush(self) -> None:
        for kind in KINDS:
            batch, self.pending[kind] = self.pending[kind], []
            if batch:
                await self._flush(kind, batch)

    async def _existing(self, kind: str, batch: list[dict[str, Any]]) -> dict[Any, dict]:
        params: dict[str, Any] = {"namespace": self.ns}
        if kind == "session_event":
            rows = await many(self.conn, "transfer.events_by_key", {
                **params, "session_ids": [uuid.UUID(r["session_id"]) for r in batch],
                "seqs": [r["seq"] for r in batch]})
            return {(str(r["session_id"]), r["seq"]): event_record(r) for r in rows}
        params["ids"] = [uuid.UUID(r["id"]) for r in batch]
        query, made = _BY_ID[kind]
        rows = await many(self.conn, query, params)
        if kind == "memory":
            return {r["id"]: r for r in await memory_records(self.conn, self.ns, rows)}
        return {str(r["id"]): made(r) for r in rows}

    async def _refuse_purged(self, kind: str, batch: list[dict[str, Any]]) -> None:
        if kind == "session_event":
            return  # purged with their session
        field = "sha256" if kind == "artifact" else "id"
        purged = await many(self.conn, "transfer.purged", {
            "namespace": self.ns, "kind": kind, "targets": [r[field] for r in batch]})
        if purged:
            targets = [r["target"] for r in purged]
            raise Conflict(
                f"the file holds {len(targets)} {kind} record(s) purged from namespace "
                f"{self.ns!r}: an import never brings purged data back",
                remedy="Nothing was imported. Import an export taken after the purge.",
                kind=kind, purged=targets[:20])

    async def _flush(self, kind: str, batch: list[dict[str, Any]]) -> None:
        await self._refuse_purged(kind, batch)
        existing = await self._existing(kind, batch)
        new = []
        for record in batch:
            key = (record["session_id"], record["seq"]) if kind == "session_event" \
                else record["id"]
            held = existing.get(key)
            if held is None:
                new.append(record)
            elif same_memory(held, record) if kind == "memory" else held == record:
                self.unchanged[kind] += 1
            else:
                differ = sorted(k for k in record if held.get(k) != record[k])
                raise Conflict(
                    f"{kind} {key if isinstance(key, str) else key[0]} is already in "
                    f"namespace {self.ns!r} with different content ({', '.join(differ)})",
                    remedy=REFUSED, kind=kind, id=str(key), fields=differ)
        if not new:
            return
        async with self.conn.cursor() as cur:
            if kind == "memory":
                rows = [memory_rows(r, self.ns) for r in new]
                await cur.executemany(q("transfer.insert_memory"), [m[0] for m in rows])
                await cur.executemany(q("transfer.insert_revision"),
                                      [v for m in rows for v in m[1]])
                for block, i in (("transfer.insert_corroboration", 2),
                                 ("transfer.insert_verification", 3), ("transfer.insert_claim", 4)):
                    if nested := [c for m in rows for c in m[i]]:
                        await cur.executemany(q(block), nested)
            else:
                await cur.executemany(q(INSERT_BLOCKS[kind]),
                                      [insert_row(r, self.ns) for r in new])
        self.created[kind] += len(new)


_BY_ID: dict[str, tuple[str, Any]] = {
    "memory": ("transfer.memories_by_id", None),
    "handoff": ("transfer.handoffs_by_id", handoff_record),
    "session": ("transfer.sessions_by_id", session_record),
    "artifact": ("transfer.artifacts_by_id", artifact_record),
}
_UNIQUE = {
    "memories_active_content": "an ACTIVE memory of the namespace already holds the same "
                               "content as a memory in the file, under another id",
    "memories_active_key": "an ACTIVE memory of the namespace already holds the key of a "
                           "memory in the file, under another id",
    "artifacts_namespace_sha256_name_key": "an artifact of the namespace already has the name "
                                           "and content of one in the file, under another id",
}


def _refusal(exc: psycopg.Error, committing: bool) -> MemhubError:
    constraint = getattr(getattr(exc, "diag", None), "constraint_name", None)
    if isinstance(exc, pg.UniqueViolation):
        if constraint in _UNIQUE:
            return Conflict(_UNIQUE[constraint], remedy=REFUSED, constraint=constraint)
        if constraint and constraint.endswith("_pkey"):
            return Conflict(
                "an id in the file is already used by another namespace of this database "
                "(the file was imported here under another name?)",
                remedy="Nothing was imported. Import with --namespace NEW: the records get "
                       "new ids derived from NEW.", constraint=constraint)
    if isinstance(exc, pg.ForeignKeyViolation | pg.CheckViolation):
        return InvalidInput(f"the file's records do not fit together ({constraint or 'check'})"
                            ": nothing was imported", remedy=DAMAGED, constraint=constraint)
    return translate(exc, committing=committing)


async def import_file(dsn: str, path: Path, plan: Scan, *, namespace: str | None = None,
                      max_content_chars: int, model: str,
                      advance: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write the records of a scanned file into `namespace` (the file's own by default).

    Returns {namespace, source_namespace, renamed, created, unchanged, blobs,
    embeddings_queued}. Raises FORBIDDEN (the role does not own the tables), CONFLICT
    (nothing imported: see the module docstring),
    INVALID_INPUT / TOO_LARGE (a record that fails its check, with its line), RETRYABLE,
    UNKNOWN_OUTCOME (the connection died during COMMIT), UNAVAILABLE."""
    target = namespace or plan.namespace
    remap = Remap(plan.namespace, target, plan.ids)
    committing = False
    try:
        # Nothing prepared: behind a transaction pooler the session serves others afterwards.
        async with await psycopg.AsyncConnection.connect(
                dsn, autocommit=True, row_factory=dict_row, prepare_threshold=None) as conn:
            async with conn.transaction():
                await conn.execute(q("transfer.restore_scope"), {"namespace": target})
                if not (await one_row(conn, "transfer.can_restore", {}))["allowed"]:
                    raise Forbidden(
                        "this database role cannot restore: it does not own memhub's tables",
                        remedy="Run the import with DATABASE_URL naming the role that owns "
                               "them (the one `memhub-admin migrate` runs as).")
                restore = _Restore(conn, target, remap, max_content_chars)
                for number, rec in records(path, advance):
                    await restore.add(number, rec)
                await restore.finish()
                queued = []
                if any(restore.created.values()):
                    queued = await many(conn, "transfer.enqueue_missing",
                                        {"namespace": target, "model": model})
                    await conn.execute(q("transfer.mark_lexicon_due"), {"namespace": target})
                committing = True
    except psycopg.Error as exc:
        raise _refusal(exc, committing) from exc
    return {"namespace": target, "source_namespace": plan.namespace,
            "renamed": remap.renamed, "created": restore.created,
            "unchanged": restore.unchanged, "blobs": restore.blobs.counts,
            "embeddings_queued": len(queued)}
