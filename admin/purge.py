"""`memhub-admin purge KIND ID --reason TEXT [--yes]`: remove a memory, handoff, session,
artifact or namespace for good (migration 0023, storage/postgres/operator/purge.py).

The one destructive path, and only here: no MCP tool reaches it. It asks first (unless
`--yes`; without a terminal it refuses), needs a reason, leaves a tombstone and an audit row
(who, when, what, why; never the removed text), then vacuums and re-analyzes the tables it
touched so the removed rows leave their pages and the planner's sampled statistics at once.

admin/cli.py registers it with `add_commands`; it runs as every command does (admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..errors import InvalidInput
from ..storage.postgres.database_url import direct_dsn
from ..storage.postgres.operator.purge import PostgresPurge
from ..storage.purge import KINDS, PurgeTarget, check_reason, check_target
from .cli_support import EXIT_USAGE, cli_actor, emit, fail, needs_confirmation, run_store

WHAT_GOES = {
    "memory": "every revision, its vector and queued jobs, its corroborations, the stored "
              "answers naming it and its words in the lineage of what replaced it",
    "handoff": "its text and the stored answers naming it",
    "session": "every event and the stored answers naming it",
    "artifact": "its references and, once nothing references them, its bytes",
    "namespace": "every memory, revision, vector, handoff, session, artifact reference, "
                 "stored answer and word statistic of it",
}


def question(what: PurgeTarget) -> str:
    where = f" in namespace {what.namespace!r}" if what.namespace else ""
    return (f"purge {what.kind} {what.target}{where} for good ({WHAT_GOES[what.kind]}); "
            "this cannot be undone")


def describe(answer: dict[str, Any]) -> str:
    removed = " ".join(f"{table}={n}" for table, n in sorted(answer["removed"].items()))
    lines = [f"purged {answer['kind']} {answer['target']} of {answer['namespace']!r} at "
             f"{answer['purged_at'][:19]} (tombstone {answer['tombstone_id']})",
             f"removed: {removed}"]
    if answer["kind"] == "memory":
        lines.append(f"replaced memories relinked to its successor: "
                     f"{answer['predecessors_relinked']}, retired (DELETED): "
                     f"{answer['predecessors_retired']}; successors whose lineage was derived "
                     f"again: {answer['successors_rederived']}")
    if answer["kind"] == "artifact":
        lines.append("namespaces: " + ", ".join(answer["namespaces"])
                     + ("; the bytes stay (still referenced elsewhere)" if answer["blob_kept"]
                        else "; the bytes are gone"))
    tokens = answer.get("active_tokens_naming_it")
    if tokens:
        lines.append("active tokens still naming the namespace (revoke with `memhub-admin "
                     "token revoke ID` if it is not coming back): "
                     + ", ".join(str(t) for t in tokens))
    if answer.get("not_reclaimed"):
        lines.append("not vacuumed, or statistics not cleared (not this role's tables, or "
                     "PostgreSQL before 18; see docs/operations.md): "
                     + ", ".join(answer["not_reclaimed"]))
    return "\n".join(lines)


def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    try:
        what = check_target(args.kind, args.id, args.namespace)
        reason = check_reason(args.reason)
    except InvalidInput as err:
        return fail(args, err.message, err.code, EXIT_USAGE)
    stop = needs_confirmation(args, question(what))
    if stop is not None:
        return stop

    async def fn(backend) -> dict[str, Any]:
        # The owner's connection, not the pool's (memhub_app may not purge); behind a
        # transaction pooler, the direct URL when there is one.
        purger = PostgresPurge(direct_dsn(settings) or backend.dsn)
        answer = await purger.purge(what, reason=reason, actor=cli_actor())
        answer["not_reclaimed"] = await purger.reclaim(answer["tables"])
        return answer

    return run_store(args, settings, fn, lambda answer: emit(args, answer, describe(answer)))


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    purge = sub.add_parser(
        "purge", parents=[common],
        help="remove a memory, handoff, session, artifact or namespace for good (asks first, "
             "needs --reason, audited, leaves a tombstone)")
    purge.add_argument("kind", choices=KINDS)
    purge.add_argument("id", help="the id (memory, handoff, session), the sha256 (artifact) "
                                  "or the name (namespace)")
    purge.add_argument("--reason", help="why, 1-500 characters, kept in the tombstone and the "
                                        "audit (never put the purged text here)")
    purge.add_argument("--namespace", metavar="N",
                       help="artifact only: remove its references in this namespace only "
                            "(default: in every namespace)")
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    purge.set_defaults(func=cmd_purge)
