"""`memhub-admin activity NAMESPACE [--limit N]`: a namespace's latest tool calls, newest
first, from the activity log (storage/activity.py): when, which tool, which surface and token,
the outcome, its error code and how long it took. Never an argument or a result: the log has
none.

admin/cli.py registers it with `add_commands`; it runs as every command does
(admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..storage.activity import LIST_MAX
from .cli_support import emit, run_store


def event_line(e: dict[str, Any]) -> str:
    outcome = e["error_code"] or "ok"
    token = f"#{e['token_id']}" if e["token_id"] is not None else "-"
    return (f"{e['at'][:23]}  {e['tool']:<22} {e['surface']:<12} {token:<6} {outcome:<18} "
            f"{e['duration_ms']:>9.1f} ms")


def cmd_activity(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> dict[str, Any]:
        return await backend.tool_activity(args.namespace, limit=args.limit)

    def render(found: dict[str, Any]) -> None:
        lines = [event_line(e) for e in found["events"]]
        emit(args, found, "\n".join(lines) or f"no tool calls recorded in {args.namespace}")

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    activity = sub.add_parser("activity", parents=[common],
                              help="a namespace's latest tool calls (no arguments or results)")
    activity.add_argument("namespace")
    activity.add_argument("--limit", type=int, default=50, help=f"calls to show (1-{LIST_MAX})")
    activity.set_defaults(func=cmd_activity)
