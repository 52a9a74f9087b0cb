"""`memhub-admin oauth clients|revoke`: the OAuth connections the operator approved on the
consent page (oauth/), and revoking one: the grant and every access and refresh token it issued
stop at once, audited as "cli:<os user>".

admin/cli.py registers them with `add_commands`; they run as every command does
(admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..storage.oauth import REVOKED_BY_OPERATOR
from .cli_support import cli_actor, emit, fail, needs_confirmation, run_store


def grant_line(g: dict[str, Any]) -> str:
    scope = ",".join(g["namespaces"]) if g["namespaces"] else "all"
    access = "read" if g["read_only"] else "read-write"
    state = "active" if g["active"] else f"revoked ({g['revoked_why']})"
    return (f"#{g['id']:<5} {g['client_name'][:32]:<32} {g['surface']:<12} {scope:<24} "
            f"{access:<10} {g['created_at'][:16]}  {state}")


def cmd_clients(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> list[dict[str, Any]]:
        grants = await backend.list_oauth_grants()
        return grants if args.all else [g for g in grants if g["active"]]

    def render(grants: list[dict[str, Any]]) -> None:
        lines = [grant_line(g) for g in grants] or ["no OAuth connections"]
        emit(args, grants, "\n".join(lines))

    return run_store(args, settings, fn, render)


def cmd_revoke(args: argparse.Namespace, settings: Settings) -> int:
    stop = needs_confirmation(args, f"revoke OAuth connection #{args.id} and its tokens")
    if stop is not None:
        return stop

    async def fn(backend) -> bool:
        return await backend.revoke_oauth_grant(cli_actor(), args.id, REVOKED_BY_OPERATOR)

    def render(done: bool) -> int | None:
        if not done:
            return fail(args, f"OAuth connection #{args.id} is unknown or already revoked",
                        "CONFLICT")
        emit(args, {"id": args.id, "revoked": True},
             f"revoked OAuth connection #{args.id}; its tokens are refused from now on")
        return None

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    oauth = sub.add_parser("oauth", help="OAuth connections (claude.ai connectors and other "
                                         "OAuth clients): list, revoke")
    osub = oauth.add_subparsers(dest="oauth_command", required=True)
    clients = osub.add_parser("clients", parents=[common],
                              help="approved OAuth connections (--all: revoked too)")
    clients.add_argument("--all", action="store_true")
    clients.set_defaults(func=cmd_clients)
    revoke = osub.add_parser("revoke", parents=[common],
                             help="revoke an OAuth connection and all its tokens")
    revoke.add_argument("id", type=int, help="the connection's id (memhub-admin oauth clients)")
    revoke.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    revoke.set_defaults(func=cmd_revoke)
