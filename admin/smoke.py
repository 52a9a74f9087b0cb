"""`memhub-admin smoke --url URL [--token-file FILE | --token TOKEN] [--namespace N]
[--profile core|full] [--purge]`: the end-to-end check of a live memhub, as a client sees it
(admin/smoke_steps.py runs it; docs/operations.md, The smoke check).

Prints one JSON report and exits 0 when every step held, 1 when one failed (`failed` names
them), 2 for a usage error. The token (a read-write token of the smoke's namespace: a client
token, never the operator's) comes from --token-file, --token or MEMHUB_SMOKE_TOKEN, in that
order, and never appears in the report: every string in it is redacted before printing.

Cleaning up: no token can purge (the purge is the operator's, on the database owner's
connection: admin/purge.py), so the sequence itself retires what it wrote through MCP, and
`--purge` adds the operator's purge of the smoke's namespace where this command reaches the
server's database (as every other memhub-admin command does). Only a namespace named
`memhub-smoke` or `memhub-smoke-*` may be purged so: a typo must not purge a project.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config import Settings
from ..errors import MemhubError, NotFound
from ..runtime import Runtime
from ..storage.postgres.operator.purge import PostgresPurge
from ..storage.principal import NAMESPACE_RE, TOOL_PROFILES
from ..storage.purge import PurgeTarget
from ..tools.server import build_mcp
from ..tools.tool_profiles import PROFILE_TOOLS
from .cli_support import EXIT_ERROR, EXIT_OK, EXIT_USAGE, cli_actor, fail, resolve_dsn
from .smoke_steps import Sequence

NAMESPACE = "memhub-smoke"
TOKEN_FILE_MAX = 4096
REDACTED = "[redacted]"


async def expected_tools(settings: Settings, profile: str) -> frozenset[str]:
    """The tools this memhub lists to a read-write token of `profile`."""
    listed = await build_mcp(Runtime(settings=settings, version="smoke")).list_tools()
    names = frozenset(tool.name for tool in listed)
    allowed = PROFILE_TOOLS[profile]
    return names if allowed is None else names & allowed


def base_url(raw: str) -> str | None:
    """The server's base URL (a trailing /mcp dropped), or None for one that is not
    http(s)://host."""
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
        return None
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/").removesuffix("/mcp")


def read_token(args: argparse.Namespace, settings: Settings) -> str | None:
    if args.token_file is not None:
        path = Path(args.token_file)
        if not path.is_file() or path.stat().st_size > TOKEN_FILE_MAX:
            return None
        return path.read_text(encoding="utf-8", errors="replace").strip() or None
    if args.token is not None:
        return args.token.strip() or None
    secret = settings.smoke_token
    return (secret.get_secret_value().strip() or None) if secret is not None else None


def redact(value: Any, token: str) -> Any:
    """`value` with the token cut out of every string in it (an error message may quote the
    URL it was sent to, ?token= included)."""
    if isinstance(value, str):
        return value.replace(token, REDACTED)
    if isinstance(value, dict):
        return {k: redact(v, token) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, token) for v in value]
    return value


async def purge_namespace(settings: Settings, namespace: str, run: str) -> dict[str, Any]:
    """The `purge` step: the operator's purge of the smoke's namespace (tombstone and audit
    as `memhub-admin purge namespace`; no VACUUM, the rows are few)."""
    record: dict[str, Any] = {"step": "purge"}
    started = time.perf_counter()
    cluster = None
    try:
        dsn, cluster = resolve_dsn(settings)
        answer = await PostgresPurge(dsn).purge(
            PurgeTarget("namespace", namespace),
            reason=f"memhub-admin smoke {run}: the smoke's own namespace", actor=cli_actor())
        record.update(status="ok", tombstone_id=answer["tombstone_id"],
                      removed=answer["removed"])
    except NotFound:
        record.update(status="ok", removed={})
    except MemhubError as err:
        record.update(status="failed", why=err.message, code=err.code)
    except Exception as exc:  # the database unreachable, a driver error: a finding
        record.update(status="failed", why=type(exc).__name__)
    finally:
        if cluster is not None:
            cluster.stop()
    record["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return record


async def run_smoke(args: argparse.Namespace, settings: Settings, url: str,
                    token: str) -> dict[str, Any]:
    run = secrets.token_hex(4)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    expected = await expected_tools(settings, args.profile)
    steps = await Sequence(url, token, args.namespace, args.profile, expected, run).run()
    if args.purge:
        steps.append(await purge_namespace(settings, args.namespace, run))
    failed = [s["step"] for s in steps if s["status"] == "failed"]
    report: dict[str, Any] = {
        "ok": not failed, "failed": failed, "url": url, "namespace": args.namespace,
        "profile": args.profile, "run": run, "at": at,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1), "steps": steps}
    if not args.purge:
        report["left"] = (
            f"namespace {args.namespace!r} keeps this run's retired rows (memories forgotten "
            "or superseded, with their revisions; a taken handoff; a session; change-feed "
            "entries); remove them with `memhub-admin purge namespace "
            f"{args.namespace} --reason smoke --yes`, or run the smoke with --purge")
    return report


def cmd_smoke(args: argparse.Namespace, settings: Settings) -> int:
    url = base_url(args.url)
    if url is None:
        return fail(args, "--url must be the server's http(s) address, e.g. "
                          "https://memhub.example.com", "INVALID_INPUT", EXIT_USAGE)
    if not NAMESPACE_RE.fullmatch(args.namespace):
        return fail(args, "--namespace is not a namespace name", "INVALID_INPUT", EXIT_USAGE)
    if args.purge and not (args.namespace == NAMESPACE
                           or args.namespace.startswith(NAMESPACE + "-")):
        return fail(args, f"--purge removes the whole namespace: only {NAMESPACE!r} or "
                          f"'{NAMESPACE}-*' may be purged by the smoke", "INVALID_INPUT",
                    EXIT_USAGE)
    token = read_token(args, settings)
    if token is None:
        return fail(args, "no token: pass --token-file FILE (or --token, or set "
                          "MEMHUB_SMOKE_TOKEN); a file must hold the token alone",
                    "INVALID_INPUT", EXIT_USAGE)
    report = asyncio.run(run_smoke(args, settings, url, token))
    print(json.dumps(redact(report, token), indent=2, default=str))
    return EXIT_OK if report["ok"] else EXIT_ERROR


def add_commands(sub, common: argparse.ArgumentParser) -> None:
    smoke = sub.add_parser(
        "smoke", parents=[common],
        help="the end-to-end check of a live server through MCP: one JSON report, non-zero "
             "on any failure")
    smoke.add_argument("--url", required=True, help="the server's base URL")
    given = smoke.add_mutually_exclusive_group()
    given.add_argument("--token-file", metavar="FILE", help="a file holding the token")
    given.add_argument("--token", help="the token (visible to other local users; prefer "
                                       "--token-file or MEMHUB_SMOKE_TOKEN)")
    smoke.add_argument("--namespace", default=NAMESPACE, help="the namespace it writes in")
    smoke.add_argument("--profile", choices=TOOL_PROFILES, default="full",
                       help="the token's tool profile")
    smoke.add_argument("--purge", action="store_true",
                       help="purge the namespace afterwards (needs the database)")
    # The database is needed only for --purge, and checked there.
    smoke.set_defaults(func=cmd_smoke, database=False)
