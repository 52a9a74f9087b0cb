"""`memhub-admin github allow|deny|list`: the GitHub repositories whose claims a namespace may
have checked (coord_reconcile asks GitHub about no other, and a webhook delivery decides claims
only in the namespaces that granted its repository). The operator grants them, never a
tenant's token; every change is audited as "cli:<os user>".

admin/cli.py registers them with `add_commands`; they run as every command does
(admin/cli_support.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from .cli_support import cli_actor, emit, run_store


def grant_line(g: dict[str, Any]) -> str:
    return f"{g['namespace']:<24} {g['repo']:<48} {g['granted_at'][:16]}  {g['granted_by']}"


def cmd_change(args: argparse.Namespace, settings: Settings) -> int:
    allow = args.github_command == "allow"

    async def fn(backend) -> dict[str, Any]:
        return await backend.grant_repo(cli_actor(), args.namespace, args.repo, allow=allow)

    def render(done: dict[str, Any]) -> None:
        if allow:
            text = (f"{done['namespace']} may have claims on {done['repo']} checked"
                    + ("" if done["changed"] else " (already granted)"))
        else:
            text = (f"{done['namespace']} may no longer have claims on {done['repo']} checked"
                    + ("" if done["changed"] else " (was not granted)"))
        emit(args, done, text)

    return run_store(args, settings, fn, render)


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend) -> list[dict[str, Any]]:
        return await backend.list_repo_grants(args.namespace)

    def render(grants: list[dict[str, Any]]) -> None:
        emit(args, grants, "\n".join(grant_line(g) for g in grants) or "no repositories granted")

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    github = sub.add_parser("github", help="the GitHub repositories each namespace may have "
                                           "its claims checked against: allow, deny, list")
    gsub = github.add_subparsers(dest="github_command", required=True)
    for name, what in (("allow", "grant a namespace a repository"),
                       ("deny", "withdraw a repository from a namespace")):
        change = gsub.add_parser(name, parents=[common], help=what)
        change.add_argument("namespace")
        change.add_argument("repo", help="owner/name")
        change.set_defaults(func=cmd_change)
    listing = gsub.add_parser("list", parents=[common], help="the granted repositories")
    listing.add_argument("namespace", nargs="?", help="only this namespace's")
    listing.set_defaults(func=cmd_list)
