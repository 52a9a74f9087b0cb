"""`memhub-admin quota set|clear|show`: a namespace's quota (live memories, stored bytes), which
the database enforces on every write (migration 0042; docs/operations.md#limits). Setting one
counts the namespace's use afresh; every change is audited as "cli:<os user>".

admin/cli.py registers them with `add_commands`; they run as every command does
(admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..errors import InvalidInput
from ..storage.limits import parse_size
from .cli_support import EXIT_USAGE, cli_actor, emit, fail, run_store


def byte_count(text: str) -> int:
    """`--max-bytes`: a number of bytes, or with K, M, G or T (powers of 1024): 50M, 2GiB."""
    try:
        return parse_size(text, "--max-bytes")
    except InvalidInput as err:
        raise argparse.ArgumentTypeError(err.message) from err


def quota_line(quota: dict[str, Any]) -> str:
    def of(used: int, limit: int | None) -> str:
        return f"{used}/{limit}" if limit is not None else f"{used} (no limit)"

    return (f"{quota['namespace']:<24} memories {of(quota['memories'], quota['max_memories'])}"
            f"  bytes {of(quota['bytes'], quota['max_bytes'])}")


def cmd_set(args: argparse.Namespace, settings: Settings) -> int:
    clear = args.quota_command == "clear"
    if not clear and args.max_memories is None and args.max_bytes is None:
        return fail(args, "give --max-memories, --max-bytes or both (`quota clear` removes a "
                          "quota)", "INVALID_INPUT", EXIT_USAGE)

    async def fn(backend) -> dict[str, Any]:
        return await backend.set_namespace_quota(
            cli_actor(), args.namespace, max_memories=None if clear else args.max_memories,
            max_bytes=None if clear else args.max_bytes)

    def render(quota: dict[str, Any]) -> None:
        emit(args, quota, ("cleared: " if clear else "set: ") + quota_line(quota))

    return run_store(args, settings, fn, render)


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> list[dict[str, Any]]:
        if args.namespace:
            return [await backend.namespace_quota(args.namespace)]
        return await backend.list_namespace_quotas()

    def render(quotas: list[dict[str, Any]]) -> None:
        emit(args, quotas, "\n".join(quota_line(q) for q in quotas) or "no quotas set")

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    quota = sub.add_parser("quota", help="a namespace's quota of live memories and stored "
                                         "bytes: set, clear, show")
    qsub = quota.add_subparsers(dest="quota_command", required=True)
    setting = qsub.add_parser("set", parents=[common],
                              help="set a namespace's quota (a limit not given: none)")
    setting.add_argument("namespace")
    setting.add_argument("--max-memories", type=int, metavar="N", help="live memories")
    setting.add_argument("--max-bytes", type=byte_count, metavar="SIZE",
                         help="stored bytes: memories' content, questions and metadata, and "
                              "artifacts (50M, 2G: powers of 1024)")
    setting.set_defaults(func=cmd_set)
    clear = qsub.add_parser("clear", parents=[common], help="remove a namespace's quota")
    clear.add_argument("namespace")
    clear.set_defaults(func=cmd_set)
    show = qsub.add_parser("show", parents=[common],
                           help="a namespace's quota and use (without one: every quota)")
    show.add_argument("namespace", nargs="?")
    show.set_defaults(func=cmd_show)
