"""`memhub-admin gc [--dry-run]`: one garbage collection now (storage/retention.py), with the
server's retention settings; the server also runs one every MEMHUB_GC_INTERVAL_SECONDS.

A backlog larger than one run's batch is worked through run after run. `--dry-run` counts
what would go and removes nothing. When another process is collecting right now, nothing is
done (exit 1, CONFLICT). A real run is audited as "cli:<os user>".

admin/cli.py registers it with `add_commands`; it runs as every command does (admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..storage.admin import Actor
from ..storage.retention import RetentionPolicy
from .cli_support import cli_actor, emit, fail, run_store

MAX_RUNS = 1000  # batches per command: 10 million rows of each kind


async def run(backend, policy: RetentionPolicy, *, dry_run: bool, actor: Actor) -> dict[str, Any]:
    """Collect until nothing is left over (one counting pass for a dry run)."""
    totals: dict[str, int] = {}
    runs = 0
    report: dict[str, Any] = {"ran": False, "reason": "busy"}
    while runs < MAX_RUNS:
        report = await backend.collect_garbage(policy, dry_run=dry_run, trigger=actor.name)
        if not report["ran"]:
            break
        runs += 1
        for kind, n in report["removed"].items():
            totals[kind] = totals.get(kind, 0) + n
        if dry_run or not report["more"]:
            break
    if runs == 0:
        return report
    if not dry_run:
        await backend.audit(actor, "gc.run", detail={"removed": totals, "runs": runs})
    return {"ran": True, "dry_run": dry_run, "runs": runs, "more": bool(report["more"]),
            ("would_remove" if dry_run else "removed"): totals}


def describe(report: dict[str, Any]) -> str:
    counts = report["would_remove" if report["dry_run"] else "removed"]
    listed = " ".join(f"{kind}={n}" for kind, n in sorted(counts.items()))
    verb = "would remove" if report["dry_run"] else f"removed ({report['runs']} run(s))"
    return f"{verb}: {listed}" + ("; more remains, run again" if report["more"] else "")


def cmd_gc(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> dict[str, Any]:
        return await run(backend, RetentionPolicy.from_settings(settings),
                         dry_run=args.dry_run, actor=cli_actor())

    def render(report: dict[str, Any]) -> int | None:
        if not report["ran"]:
            return fail(args, "another garbage collection is running; nothing was done "
                              "(try again once it is over)", "CONFLICT")
        emit(args, report, describe(report))
        return None

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    gc = sub.add_parser("gc", parents=[common],
                        help="remove spent idempotency answers, dead jobs, unreferenced "
                             "artifact bytes and expired admin rows now")
    gc.add_argument("--dry-run", action="store_true", help="count what would go; remove nothing")
    gc.set_defaults(func=cmd_gc)
