"""`memhub-admin token list|create|rotate|revoke|limits`: the tokens clients connect with, as
the dashboard shows them. A new token is printed once; only its hash is stored. Rotate and
revoke ask first (unless `--yes`); every change is audited as "cli:<os user>".
"""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..storage.principal import TOKEN_LIMIT_BOUNDS, TOOL_PROFILES, TokenLimits
from .cli_support import EXIT_USAGE, cli_actor, emit, fail, needs_confirmation, run_store


def token_line(t: dict[str, Any]) -> str:
    scope = ",".join(t["namespaces"]) if t["namespaces"] else "*"
    access = ("ro" if t["read_only"] else "rw") + f" {t['tool_profile']}"
    state = "active" if t["active"] else f"revoked {t['revoked_at'][:19]}"
    label = f"  {t['label']}" if t["label"] else ""
    own = " ".join(f"{k}={v}" for k, v in t["limits"].items() if v is not None)
    limits = f"  limits: {own}" if own else ""
    return (
        f"{t['id']:>5}  {t['kind']:<7} {t['surface']:<12} {t['prefix']}…  {access}  "
        f"{scope:<24} {state}{label}{limits}"
    )


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    async def fn(backend):
        return await backend.list_tokens()

    def render(tokens):
        shown = tokens if args.all else [t for t in tokens if t["active"]]
        emit(args, shown, "\n".join(token_line(t) for t in shown) or "no tokens")

    return run_store(args, settings, fn, render)


def cmd_create(args: argparse.Namespace, settings: Settings) -> int:
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


def cmd_rotate(args: argparse.Namespace, settings: Settings) -> int:
    stop = needs_confirmation(args, f"rotate the {args.surface!r} token (its clients stop working)")
    if stop is not None:
        return stop

    async def fn(backend):
        return await backend.rotate_surface(cli_actor(), args.surface)

    def render(row):
        emit(args, row,
             f"rotated {row['surface']}: new token {row['id']}; shown once:\n{row['token']}")

    return run_store(args, settings, fn, render)


def cmd_revoke(args: argparse.Namespace, settings: Settings) -> int:
    stop = needs_confirmation(args, f"revoke token {args.id} (its clients stop working)")
    if stop is not None:
        return stop

    async def fn(backend):
        return await backend.revoke_token(cli_actor(), args.id)

    def render(row):
        emit(args, row, f"revoked token {row['id']} ({row['surface']}, {row['prefix']}…)")

    return run_store(args, settings, fn, render)


def limit_value(text: str) -> int | None:
    """A limit on the command line: an integer, or `default` for the server's."""
    return None if text == "default" else int(text)


def cmd_limits(args: argparse.Namespace, settings: Settings) -> int:
    given = {name: getattr(args, name) for name in TOKEN_LIMIT_BOUNDS if hasattr(args, name)}

    async def fn(backend):
        token = next((t for t in await backend.list_tokens()
                      if t["id"] == args.id and t["active"]), None)
        if token is None or not given:
            return token
        limits = TokenLimits.of({**token["limits"], **given})
        return await backend.set_token_limits(cli_actor(), args.id, limits)

    def render(token):
        if token is None:
            return fail(args, f"no active token with id {args.id} (memhub-admin token list)",
                        "NOT_FOUND")
        own = token["limits"]
        shown = {name: own[name] if own[name] is not None else
                 f"{getattr(settings, 'token_' + name)} (default)" for name in own}
        emit(args, token, f"token {token['id']} ({token['surface']}, {token['prefix']}…): "
             + ", ".join(f"{k}={v}" for k, v in shown.items()))
        return None

    return run_store(args, settings, fn, render)


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    token = sub.add_parser("token", help="list, create, rotate, revoke tokens")
    tsub = token.add_subparsers(dest="token_command", required=True)
    listing = tsub.add_parser("list", parents=[common], help="active tokens (--all: revoked too)")
    listing.add_argument("--all", action="store_true")
    listing.set_defaults(func=cmd_list)

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
    create.set_defaults(func=cmd_create)

    rotate = tsub.add_parser("rotate", parents=[common], help="replace a surface's token")
    rotate.add_argument("surface")
    rotate.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    rotate.set_defaults(func=cmd_rotate)

    revoke = tsub.add_parser("revoke", parents=[common], help="revoke a token by id")
    revoke.add_argument("id", type=int)
    revoke.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    revoke.set_defaults(func=cmd_revoke)

    limits = tsub.add_parser("limits", parents=[common],
                             help="show or set a token's limits (each: a number, or 'default')")
    limits.add_argument("id", type=int)
    for name, (low, high) in TOKEN_LIMIT_BOUNDS.items():
        limits.add_argument("--" + name.replace("_", "-"), dest=name, type=limit_value,
                            default=argparse.SUPPRESS, metavar="N",
                            help=f"{low}-{high}, or 'default' (MEMHUB_TOKEN_{name.upper()})")
    limits.set_defaults(func=cmd_limits)
