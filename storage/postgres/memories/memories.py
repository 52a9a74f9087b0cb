"""`MemoryStore`: versioned memories on PostgreSQL (a mixin over `PgCore`).

Every write is one transaction: the memory row, its revision, the embedding job, the
supersession of older memories and the idempotency record commit together or not at all.
Concurrency is decided by the database (the single-statement compare-and-set, partial unique
indexes, row locks re-checked under READ COMMITTED), never by a read-then-write in Python.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, NoReturn

from psycopg.types.json import Jsonb

from ....errors import Conflict, InvalidInput, NotFound, Retryable
from ... import gate_confirm
from ... import memory_input as mi
from ...claims import check_claim
from ...memory_dicts import effective_status, memory_dict, memory_now
from ...principal import Principal, check_namespace
from ...sanitize import Screening, screen
from ...work_input import json_strings
from ..idempotency import IdempotentWrites
from ..queries import q
from ..rows import Conn, many, one, one_row
from .claims import insert_claim
from .retire_gate import RetireGate
from .trust import Provenance, persisted

logger = logging.getLogger(__name__)

class MemoryStore(RetireGate, IdempotentWrites):
    """Implements `MemoryBackend`; composed into `PostgresBackend` over `PgCore`. A write that
    retires memories passes the intent gate in its own transaction (retire_gate.py)."""

    # --- remember -------------------------------------------------------------------------
    async def remember(
        self,
        principal: Principal,
        namespace: str,
        *,
        content: str,
        kind: str = "NOTE",
        title: str | None = None,
        tags: list[str] | None = None,
        key: str | None = None,
        supersedes: list[str] | None = None,
        client_request_id: str | None = None,
        expires_at: Any = None,
        metadata: dict[str, Any] | None = None,
        origin: str | None = None,
        model: str | None = None,
        derived_from: list[Any] | None = None,
        client_info: str | None = None,
        claim: dict[str, Any] | None = None,
        confirmation: str | None = None,
        questions: list[str] | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        nonce = await self._confirmation_nonce(
            principal, namespace, "memory_remember", gate_confirm.remember_arguments(
                content=content, kind=kind, title=title, tags=tags, key=key,
                supersedes=supersedes, client_request_id=client_request_id,
                expires_at=expires_at, metadata=metadata, origin=origin, model=model,
                derived_from=derived_from, claim=claim, questions=questions), confirmation)
        kind = mi.check_kind(kind)
        clean_claim = check_claim(claim)
        clean_content = mi.check_content(content, self.settings.max_content_chars)
        clean_title = mi.check_title(title)
        clean_tags = mi.check_tags(tags)
        clean_key = mi.check_key(key)
        targets = mi.check_supersedes(supersedes)
        expiry = mi.check_expires_at(expires_at)
        meta = mi.check_metadata(metadata)
        clean_questions = mi.check_questions(questions) or []
        mi.check_size(clean_content, clean_questions, self.settings.max_content_chars)
        request_id = mi.check_request_id(client_request_id)
        source = Provenance.of(origin, model, derived_from, client_info, default=mi.DEFAULT_ORIGIN)
        # Metadata and questions are read by a model too: instruction-shaped text in any of
        # their strings (keys included) quarantines the memory as it would in the content.
        screening = screen(clean_title, clean_content, *clean_questions, *json_strings(meta))
        if screening.quarantined and targets:
            # Otherwise an injected note could retire a real decision while itself being
            # hidden from retrieval: the decision would silently vanish.
            raise InvalidInput(
                "quarantined content cannot supersede other memories",
                field="supersedes",
                reasons=screening.reasons,
            )
        digest = mi.content_hash(clean_content)
        same_content = {"namespace": namespace, "content_hash": digest}
        payload = {
            "content": content, "kind": kind, "title": title, "tags": tags, "key": key,
            "supersedes": sorted(str(t) for t in targets),
            "expires_at": expiry.isoformat() if expiry else None, "metadata": meta,
            **source.payload(), **({"claim": clean_claim} if clean_claim else {}),
            **({"questions": questions} if questions is not None else {}),
        }

        async def deduplicated(conn: Conn, existing: dict[str, Any]) -> dict[str, Any]:
            if clean_claim:  # kept only if the memory has none (claims never change)
                await insert_claim(conn, namespace, existing["id"], clean_claim)
            return await self._deduplicated(conn, principal, existing, screening)

        async def body(conn: Conn) -> dict[str, Any]:
            if targets or nonce is not None:
                await self._admit_retirement(conn, namespace, nonce)
            await conn.execute(q("memories.expire_due_in_namespace"), {"namespace": namespace})
            if expiry is not None:
                when = await one_row(conn, "memories.is_in_past", {"ts": expiry})
                if when["past"]:
                    raise InvalidInput("expires_at is in the past", field="expires_at")
            new_id = uuid.uuid4()
            await source.check(conn, namespace)
            if targets:
                await self._supersede(conn, namespace, targets, new_id)
                await self._check_content_free(conn, namespace, digest, None)
            else:
                existing = await one(conn, "memories.active_by_hash", same_content)
                if existing is not None:
                    return await deduplicated(conn, existing)
            if clean_key is not None:
                holder = await one(
                    conn, "memories.active_by_key", {"namespace": namespace, "key": clean_key}
                )
                if holder is not None:
                    raise Conflict(
                        f"key {clean_key!r} already names an ACTIVE memory; nothing was written",
                        remedy="Revise that memory (details.existing), or supersede it "
                               "(supersedes=[details.existing_id]).",
                        existing_id=str(holder["id"]),
                        existing=await self._now(conn, namespace, holder["id"]),
                    )
            row = await one(conn, "memories.insert_memory", {
                "id": new_id, "namespace": namespace, "kind": kind, "title": clean_title,
                "content": clean_content, "tags": clean_tags, "key": clean_key,
                "questions": clean_questions,
                "metadata": Jsonb(meta) if meta is not None else None,
                "content_hash": digest, "author": principal.surface,
                "quarantined": screening.quarantined, "expires_at": expiry,
                **source.columns(),
            })
            if row is None:
                # A concurrent identical assertion committed between our check and insert.
                existing = await one(conn, "memories.active_by_hash", same_content)
                if existing is None:
                    raise Retryable("a concurrent write retired a duplicate; retry")
                if targets:
                    raise Conflict(
                        "the same content is already ACTIVE in another memory; nothing was "
                        "written",
                        remedy="Use that memory (details.existing) or reword this one.",
                        existing_id=str(existing["id"]),
                        existing=await self._now(conn, namespace, existing["id"]))
                return await deduplicated(conn, existing)
            await self._record_revision(conn, row, principal.surface)
            created = memory_dict(row)
            if clean_claim:
                await insert_claim(conn, namespace, new_id, clean_claim)
                created["claim"] = {**clean_claim, "verdict": "unchecked"}
            return {
                "outcome": "created",
                "memory": created,
                "superseded": [str(t) for t in targets],
                "quarantine": screening.as_dict(),
            }

        return persisted(await self._idempotent_write(
            principal, namespace, request_id, "remember", payload, body
        ), await self.durable_commits())

    async def _supersede(
        self, conn: Conn, namespace: str, targets: list[uuid.UUID], new_id: uuid.UUID
    ) -> None:
        moved = await many(conn, "memories.supersede",
                           {"namespace": namespace, "ids": targets, "new_id": new_id})
        if len(moved) == len(targets):
            return
        # Nothing is written: raising rolls the whole transaction back.
        found = {r["id"]: r for r in await many(
            conn, "memories.now_of", {"namespace": namespace, "ids": targets})}
        missing = [str(t) for t in targets if t not in found]
        if missing:
            raise NotFound(
                f"supersedes names memories that do not exist in namespace {namespace!r}",
                missing=missing,
            )
        moved_ids = {r["id"] for r in moved}
        raise Conflict(
            "only ACTIVE memories can be superseded; nothing was written",
            remedy="Read details.not_active (what each is now; a superseded one names its "
                   "successor in superseded_by), decide again, and supersede what is ACTIVE.",
            not_active=[memory_now(found[t]) for t in targets if t not in moved_ids],
        )

    async def _now(self, conn: Conn, namespace: str, memory_id: Any) -> dict[str, Any] | None:
        """What a memory is now (memory_dicts.memory_now), read in a new statement: under
        READ COMMITTED it sees the write that won."""
        row = await one(conn, "memories.current_revision_of",
                        {"namespace": namespace, "id": memory_id})
        return memory_now(row) if row is not None else None

    async def _check_content_free(
        self, conn: Conn, namespace: str, digest: bytes, memory_id: uuid.UUID | None
    ) -> None:
        other = await one(conn, "memories.active_by_hash",
                           {"namespace": namespace, "content_hash": digest})
        if other is not None and other["id"] != memory_id:
            raise Conflict(
                "the same content is already ACTIVE in another memory; nothing was written",
                remedy="Use that memory (details.existing) or reword this one.",
                existing_id=str(other["id"]),
                existing=await self._now(conn, namespace, other["id"]),
            )

    async def _deduplicated(
        self, conn: Conn, principal: Principal, existing: dict[str, Any], screening: Screening
    ) -> dict[str, Any]:
        added = await one(conn, "memories.corroborate", {
            "namespace": existing["namespace"], "memory_id": existing["id"],
            "author": principal.surface, "memory_author": existing["author_client"],
        })
        return {
            "outcome": "deduplicated",
            "memory": memory_dict(existing),
            "superseded": [],
            "corroborated": added is not None,
            "quarantine": screening.as_dict(),
        }

    async def _record_revision(self, conn: Conn, row: dict[str, Any], author: str) -> None:
        await conn.execute(q("memories.insert_revision"), {
            "memory_id": row["id"], "namespace": row["namespace"],
            "revision": row["current_revision"], "title": row["title"],
            "content": row["content"], "tags": row["tags"], "questions": row["questions"],
            "author": author,
        })
        await conn.execute(q("memories.enqueue_embedding"), {
            "namespace": row["namespace"], "memory_id": row["id"],
            "revision": row["current_revision"],
        })

    # --- revise ---------------------------------------------------------------------------
    async def revise(
        self,
        principal: Principal,
        namespace: str,
        memory_id: str,
        expected_revision: int,
        *,
        content: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        client_request_id: str | None = None,
        origin: str | None = None,
        model: str | None = None,
        derived_from: list[Any] | None = None,
        client_info: str | None = None,
        questions: list[str] | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        mid = mi.parse_id(memory_id)
        expected = mi.check_revision(expected_revision)
        if content is None and title is None and tags is None and questions is None:
            raise InvalidInput("give at least one of content, title, tags, questions to "
                               "revise")
        new_content = (mi.check_content(content, self.settings.max_content_chars)
                       if content is not None else None)
        new_title = mi.check_title(title) if title is not None else None
        new_tags = mi.check_tags(tags) if tags is not None else None
        new_questions = mi.check_questions(questions)
        request_id = mi.check_request_id(client_request_id)
        # Omitted provenance is kept; a new revision restates only what it is given.
        source = Provenance.of(origin, model, derived_from, client_info, default=None)
        payload = {"id": str(mid), "expected_revision": expected, "content": content,
                   "title": title, "tags": tags, **source.payload(),
                   **({"questions": questions} if questions is not None else {})}
        ids = {"namespace": namespace, "id": mid}

        async def body(conn: Conn) -> dict[str, Any]:
            await conn.execute(q("memories.expire_due_in_namespace"), {"namespace": namespace})
            base = await one(conn, "memories.current_revision_of", ids)
            if base is None:
                raise NotFound(f"no memory {mid} in namespace {namespace!r}")
            await source.check(conn, namespace)
            # Unchanged fields come from the row we read. If it is not at `expected` any
            # more, the CAS below matches nothing and these values are never written.
            eff_title = new_title if title is not None else base["title"]
            eff_content = new_content if new_content is not None else base["content"]
            eff_tags = new_tags if new_tags is not None else list(base["tags"])
            # Without `questions` a revision keeps the previous one's; [] clears them.
            eff_questions = (new_questions if new_questions is not None
                             else list(base["questions"]))
            mi.check_size(eff_content, eff_questions, self.settings.max_content_chars)
            digest = mi.content_hash(eff_content)
            # Revising keeps the metadata: it is screened again with the new text, so a
            # revision cannot lift a quarantine its metadata earned.
            screening = screen(eff_title, eff_content, *eff_questions,
                               *json_strings(base["metadata"]))
            if digest != bytes(base["content_hash"]) and base["status"] == "ACTIVE":
                await self._check_content_free(conn, namespace, digest, mid)
            row = await one(conn, "memories.revise_cas", {
                **ids, "expected_revision": expected, "title": eff_title,
                "content": eff_content, "tags": eff_tags, "questions": eff_questions,
                "content_hash": digest, "quarantined": screening.quarantined,
                **source.columns(),
            })
            if row is None:
                await self._revise_lost(conn, ids, expected)
            await conn.execute(q("memories.retire_current_revision"),
                               {"namespace": namespace, "memory_id": mid})
            await self._record_revision(conn, row, principal.surface)
            return {
                "outcome": "revised",
                "memory": memory_dict(row),
                "quarantine": screening.as_dict(),
            }

        return persisted(await self._idempotent_write(
            principal, namespace, request_id, "revise", payload, body
        ), await self.durable_commits())

    async def _revise_lost(self, conn: Conn, ids: dict[str, Any], expected: int) -> NoReturn:
        """Why the compare-and-set matched nothing, as an error: the memory is not ACTIVE, or
        another write moved it past `expected`. Nothing was written either way."""
        # A new statement: under READ COMMITTED it sees the winner's committed revision.
        now = await one(conn, "memories.current_revision_of", ids)
        if now is None:
            raise NotFound(f"no memory {ids['id']} in namespace {ids['namespace']!r}")
        if effective_status(now) != "ACTIVE":
            # Re-reading and retrying would never succeed: point at the successor instead.
            raise Conflict(
                f"memory is {effective_status(now)}; only ACTIVE memories can be revised",
                remedy="Revise its successor (details.superseded_by) or remember a new memory.",
                expected_revision=expected, **memory_now(now),
            )
        raise Conflict(
            f"memory is at revision {now['current_revision']}, not {expected}: another write "
            "won; nothing was written",
            remedy="Read details (the current revision, its content, author and time), decide, "
                   "and revise again with expected_revision = details.current_revision.",
            expected_revision=expected, **memory_now(now),
        )
