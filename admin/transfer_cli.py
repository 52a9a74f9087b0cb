"""The `export` and `import` commands of memhub-admin: their arguments, and how each runs.

admin/cli.py registers them with `add_commands`; they run as every command does
(admin/cli_support.py: the database found as the server finds it, migrations checked, errors
rendered with their code and remedy).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from ..config import Settings
from ..errors import MemhubError
from . import export, import_, markdown_import
from .cli_support import EXIT_ERROR, EXIT_OK, EXIT_USAGE, emit, fail, needs_confirmation, run_store


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> dict[str, Any]:
        return await export.run(backend.dsn, args.namespace, args.out, force=args.force,
                                progress=sys.stderr.isatty())

    def render(report: dict[str, Any]) -> None:
        if report["file"] == "-":  # stdout holds the file: the summary goes elsewhere
            print(export.describe(report), file=sys.stderr)
        else:
            emit(args, report, export.describe(report))

    return run_store(args, settings, fn, render)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    if args.markdown:
        return _import_markdown(args, settings)
    if args.dry_run:
        return fail(args, "--dry-run goes with --markdown", "INVALID_INPUT", EXIT_USAGE)
    if len(args.files) != 1:
        return fail(args, "import restores one export file at a time (or pass "
                          "--markdown for notes)", "INVALID_INPUT", EXIT_USAGE)
    if args.namespace is None:
        # The file chooses where it is written: say which namespace before writing there.
        try:
            target = import_.file_namespace(args.files[0])
        except MemhubError as err:
            return fail(args, f"{err.message} ({err.remedy})", err.code)
        stop = needs_confirmation(
            args, f"import {args.files[0]} into namespace {target!r}, the one its header names",
            remedy="pass --yes, or name the namespace with --namespace NS")
        if stop is not None:
            return stop

    async def fn(backend) -> dict[str, Any]:
        return await import_.run(backend.dsn, settings, args.files[0],
                                 namespace=args.namespace, progress=sys.stderr.isatty())

    return run_store(args, settings, fn,
                     lambda report: emit(args, report, import_.describe(report)))


def _import_markdown(args: argparse.Namespace, settings: Settings) -> int:
    if not args.namespace:
        return fail(args, "--markdown needs --namespace NS (the namespace to seed)",
                    "INVALID_INPUT", EXIT_USAGE)
    try:
        notes = markdown_import.read_notes(args.files)
    except MemhubError as err:
        return fail(args, f"{err.message} ({err.remedy})", err.code)
    except OSError as err:
        return fail(args, f"cannot read {err.filename}: {err.strerror}")
    if args.dry_run:
        rows = [{**asdict(n), "outcome": "would write"} for n in notes]
        emit(args, rows, markdown_import.describe(rows, dry_run=True))
        return EXIT_OK

    async def fn(backend) -> list[dict[str, Any]]:
        return await markdown_import.run(backend, args.namespace, notes)

    def render(rows: list[dict[str, Any]]) -> int | None:
        emit(args, rows, markdown_import.describe(rows, dry_run=False))
        return EXIT_ERROR if any(r["outcome"] == "refused" for r in rows) else None

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    exp = sub.add_parser("export", parents=[common],
                         help="write one namespace to a portable file (JSON Lines)")
    exp.add_argument("namespace")
    exp.add_argument("--out", metavar="FILE",
                     help="where to write (default memhub-NAMESPACE.jsonl; '-' for stdout)")
    exp.add_argument("--force", action="store_true", help="replace FILE if it exists")
    exp.set_defaults(func=cmd_export)

    imp = sub.add_parser("import", parents=[common],
                         help="restore an export file, or seed a namespace from markdown "
                              "notes (--markdown)")
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument("--namespace", metavar="NS",
                     help="import into NS instead of the file's namespace (records get new "
                          "ids derived from NS); required with --markdown")
    imp.add_argument("--markdown", action="store_true",
                     help="FILEs are markdown notes (CLAUDE.md, AGENTS.md, ADRs): one memory "
                          "per section or list item, kind guessed")
    imp.add_argument("--dry-run", action="store_true",
                     help="with --markdown: show the memories and kinds, write nothing")
    imp.add_argument("--yes", action="store_true",
                     help="without --namespace: import into the file's namespace without "
                          "asking")
    imp.set_defaults(func=cmd_import)
