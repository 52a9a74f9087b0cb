"""Export one namespace to a file (storage/transfer_format.py), and what the file holds of
every tenant table.

An export is an operator's read of one namespace, not a tool call: it runs on its own
connection (memhub-admin's), as `memhub_app`, in one REPEATABLE READ READ ONLY transaction
scoped to the namespace. Row-level security keeps every other namespace out of it, and the
artifact bytes come through `memhub_artifact_read`, as the service reads them. The snapshot
makes the file one consistent moment of the namespace even while the server keeps writing.
The role and the scope are set for the transaction only and nothing is prepared, so a
transaction pooler in front of the database changes nothing.

The import is storage/postgres/operator/restore.py.
"""

from __future__ import annotations

import base64
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

import psycopg
from psycopg.rows import dict_row

from ....errors import Internal, NotFound
from ...transfer_format import Writer
from ...transfer_records import (
    artifact_record,
    event_record,
    handoff_record,
    memory_record,
    profile_record,
    session_record,
)
from ...work_input import CHUNK_SIZE
from ..core import APP_ROLE
from ..errors import translate
from ..queries import q
from ..rows import Conn, many, one

PAGE = 500

IN_FILE = "in the file"
ORDER = "database-local order: the file keeps the order instead, an import numbers anew"
NAMESPACE = "the file's header (an import may rename it)"
NESTED = "implied: nested under the record it belongs to"
GENERATED = "generated from the other columns"

# What an export does with each column of each tenant table (a table with a `namespace`
# column). tests/integration/test_transfer_coverage.py fails when a migration adds a tenant
# table or a column that is not listed here (or in LEFT_OUT), so nothing is left out silently.
COLUMNS: dict[str, dict[str, str]] = {
    "namespace_profiles": {
        **dict.fromkeys(("profile", "version", "created_at", "updated_at", "updated_by"),
                        IN_FILE),
        "namespace": NAMESPACE,
    },
    "memories": {
        **dict.fromkeys(("id", "kind", "key", "metadata", "status", "superseded_by",
                         "current_revision", "author_client", "quarantined", "deleted_reason",
                         "created_at", "updated_at", "retired_at", "expires_at", "lineage",
                         "origin", "model", "client_info", "derived_from"), IN_FILE),
        "seq": ORDER, "namespace": NAMESPACE,
        "title": "the current revision's (revisions[-1])",
        "content": "the current revision's (revisions[-1])",
        "tags": "the current revision's (revisions[-1])",
        "questions": "the current revision's (revisions[-1])",
        "content_hash": "recomputed from the content on import",
        "tag_ns_tsv": GENERATED, "search_tsv": GENERATED, "search_ns_tsv": GENERATED,
        "questions_tsv": GENERATED, "questions_ns_tsv": GENERATED,
    },
    "memory_revisions": {
        **dict.fromkeys(("revision", "title", "content", "tags", "questions",
                         "author_client", "created_at"), IN_FILE),
        "memory_id": NESTED, "namespace": NAMESPACE,
        "is_current": "implied: the revision numbered current_revision",
    },
    "memory_verifications": {
        **dict.fromkeys(("revision", "verified_by", "verified_at"), IN_FILE),
        "id": ORDER, "memory_id": NESTED, "namespace": NAMESPACE,
    },
    "memory_claims": {
        **dict.fromkeys(("repo", "pr", "branch", "sha"), IN_FILE),
        "memory_id": NESTED, "namespace": NAMESPACE,
        "created_at": "the import's time: the claim is checked again there, its verdicts are "
                      "not in the file",
    },
    "memory_corroborations": {
        **dict.fromkeys(("author_client", "created_at"), IN_FILE),
        "id": ORDER, "memory_id": NESTED, "namespace": NAMESPACE,
    },
    "handoffs": {
        **dict.fromkeys(("id", "title", "body", "next_steps", "refs", "for_surface",
                         "author_client", "status", "taken_by", "taken_at", "quarantined",
                         "quarantine_reasons", "created_at"), IN_FILE),
        "seq": ORDER, "namespace": NAMESPACE,
    },
    "sessions": {
        **dict.fromkeys(("id", "title", "author_client", "status", "next_seq", "quarantined",
                         "quarantine_reasons", "created_at", "updated_at", "closed_at",
                         "closed_by"), IN_FILE),
        "seq": ORDER, "namespace": NAMESPACE,
    },
    "session_events": {
        **dict.fromkeys(("session_id", "seq", "event_id", "type", "payload", "request_hash",
                         "author_client", "quarantined", "quarantine_reasons", "created_at"),
                        IN_FILE),
        "namespace": NAMESPACE,
    },
    "artifacts": {
        **dict.fromkeys(("id", "sha256", "name", "media_type", "size", "author_client",
                         "created_at"), IN_FILE),
        "seq": ORDER, "namespace": NAMESPACE,
    },
}

# Tenant tables an export leaves out, and why.
LEFT_OUT: dict[str, str] = {
    "memory_embeddings": "derived: the worker embeds the imported memories again (queued)",
    "memory_question_embeddings": "derived: embedded again with their memories (queued)",
    "embedding_jobs": "derived: the import queues a job per imported live memory",
    "lexicon_words": "derived: word statistics, recounted (the import marks them due)",
    "lexicon_state": "derived: word statistics, recounted (the import marks them due)",
    "memory_observations": "feedback about this database's memories, addressed here (by "
                           "revising or verifying them); an import starts with none",
    "idempotency_keys": "not portable: replay records of this database's tokens (token_id); "
                        "a client retries against the server it wrote to",
    "bootstrap_marks": "not portable: where this database's tokens (token_id) last read the "
                       "change feed; a client's first bootstrap on the new server starts afresh",
    "purge_tombstones": "this database's record of its purges (reason and actor are its "
                        "operators'); an import refuses any record one of them names",
    "change_feed": "derived: written by triggers as rows change, so an import records its own "
                   "changes ('imported'); positions are this database's transaction ids",
    "change_feed_trimmed": "this database's retention marks, in its own transaction ids",
    "gate_skills": "not in format version 1: define the skills again with skill_define after "
                   "an import (docs/intent-gate.md)",
    "gate_intents": "a log of what agents set out to do here, not project knowledge",
    "tool_events": "the activity log of this server's tokens (token_id), not project "
                   "knowledge; kept 14 days by default",
    "gate_nonces": "spent confirmations of this database's tokens: meaningless elsewhere",
    "claim_verdicts": "checks made from this database; coord_reconcile checks again after an "
                      "import",
    "github_repo_grants": "the operator's decision on this server (memhub-admin github allow), "
                          "never a tenant's: grant the repositories again on the new server",
    "namespace_quotas": "the operator's decision on this server (memhub-admin quota set), "
                        "never a tenant's: set the quota again on the new server",
}


def _group(rows: list[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row[key]].append(row)
    return out


async def memory_records(conn: Conn, namespace: str,
                         rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The file records of these `memories` rows (their revisions and corroborations read).

    A derived_from entry naming a record the namespace no longer holds (a purge removed it)
    is left out: an import checks every entry as memory_remember does, and would refuse it."""
    ids = [r["id"] for r in rows]
    params = {"namespace": namespace, "ids": ids}
    sources = [d for r in rows for d in r["derived_from"]]
    if sources:
        gone = {(m["type"], str(m["id"])) for m in await many(conn, "trust.missing_sources", {
            "namespace": namespace, "types": [d["type"] for d in sources],
            "ids": [d["id"] for d in sources]})}
        if gone:
            rows = [{**r, "derived_from": [d for d in r["derived_from"]
                                           if (d["type"], d["id"]) not in gone]}
                    for r in rows]
    revisions = _group(await many(conn, "transfer.revisions_of", params), "memory_id")
    corroborations = _group(await many(conn, "transfer.corroborations_of", params),
                            "memory_id")
    verifications = _group(await many(conn, "transfer.verifications_of", params), "memory_id")
    claims = {c["memory_id"]: c for c in await many(conn, "transfer.claims_of", params)}
    return [memory_record(r, revisions[r["id"]], corroborations[r["id"]], verifications[r["id"]],
                          claims.get(r["id"])) for r in rows]


async def _pages(conn: Conn, name: str, params: dict[str, Any]
                 ) -> AsyncIterator[list[dict[str, Any]]]:
    """Every row of a keyset-paged query (`after` the last row's seq), page by page."""
    after = 0
    while True:
        rows = await many(conn, name, {**params, "after": after, "limit": PAGE})
        if not rows:
            return
        yield rows
        after = rows[-1]["seq"]


async def export_namespace(dsn: str, namespace: str, out: BinaryIO, *,
                           start: Callable[[int], None] | None = None,
                           advance: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write every record of `namespace` to `out`. `start(total)` is told the number of
    records to come, `advance(n)` each time n more are written.

    Returns {namespace, counts, sha256, bytes}. Raises NOT_FOUND when the namespace holds
    nothing, UNAVAILABLE/RETRYABLE when the database fails (the file is then incomplete:
    it has no end record, and an import refuses it)."""
    ns = {"namespace": namespace}
    step = advance or (lambda n: None)
    try:
        async with await psycopg.AsyncConnection.connect(
                dsn, autocommit=True, row_factory=dict_row, prepare_threshold=None) as conn:
            async with conn.transaction():
                await conn.execute(q("transfer.export_snapshot"))
                await conn.execute(q("transfer.export_scope"),
                                   {"role": APP_ROLE, "namespace": namespace})
                totals = await one(conn, "transfer.export_counts", ns)
                if not totals or not any(totals.values()):
                    raise NotFound(f"namespace {namespace!r} holds nothing to export",
                                   remedy="Check the name: `memhub-admin status` lists the "
                                          "namespaces that hold memories.")
                if start is not None:
                    start(sum(totals.values()))
                writer = Writer(out, namespace)
                await _write_all(conn, writer, ns, step)
    except psycopg.Error as exc:
        raise translate(exc, committing=False) from exc
    return {"namespace": namespace, **writer.finish()}


async def _write_all(conn: Conn, writer: Writer, ns: dict[str, str],
                     step: Callable[[int], None]) -> None:
    namespace = ns["namespace"]
    profile = await one(conn, "profiles.get", ns)
    if profile is not None:
        writer.write(profile_record(profile))
        step(1)
    async for rows in _pages(conn, "transfer.memories_page", ns):
        for record in await memory_records(conn, namespace, rows):
            writer.write(record)
        step(len(rows))
    async for rows in _pages(conn, "transfer.handoffs_page", ns):
        for row in rows:
            writer.write(handoff_record(row))
        step(len(rows))
    async for rows in _pages(conn, "transfer.sessions_page", ns):
        for row in rows:
            writer.write(session_record(row))
            step(1)
            async for events in _pages(conn, "transfer.events_page",
                                       {**ns, "session_id": row["id"]}):
                for event in events:
                    writer.write(event_record(event))
                step(len(events))
    written: set[bytes] = set()
    async for rows in _pages(conn, "transfer.artifacts_page", ns):
        for row in rows:
            sha = bytes(row["sha256"])
            if sha not in written:
                await _write_blob(conn, writer, sha, row["size"])
                written.add(sha)
            writer.write(artifact_record(row))
            step(1)


async def _write_blob(conn: Conn, writer: Writer, sha: bytes,
                      size: int) -> None:
    writer.write({"record": "blob", "sha256": sha.hex(), "size": size})
    for offset in range(0, size, CHUNK_SIZE):
        got = await one(conn, "artifacts.read",
                        {"sha": sha, "offset": offset, "length": CHUNK_SIZE})
        if got is None or got["data"] is None:
            raise Internal(f"the bytes of artifact {sha.hex()} could not be read")
        writer.write({"record": "blob_chunk", "sha256": sha.hex(), "offset": offset,
                      "data": base64.b64encode(bytes(got["data"])).decode("ascii")})


def as_uuid(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value is not None else None
