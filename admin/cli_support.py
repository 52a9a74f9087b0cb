"""What every memhub-admin command shares: finding the server's database, running against the
store once its migrations are applied, printing (text or `--json`), failing with a code, and
asking for confirmation. The command modules (`cli.py`, `token_cli.py`, `purge.py`, `gc.py`,
`oauth_cli.py`, `transfer_cli.py`) import these; nothing is handed around.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import Settings
from ..errors import MemhubError, NoDatabase
from ..storage.admin import Actor
from ..storage.postgres.database_url import direct_dsn
from ..storage.postgres.migrate import migration_files

if TYPE_CHECKING:
    from ..storage.postgres.backend import PostgresBackend
    from ..storage.postgres.embedded import EmbeddedPostgres

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 3

T = TypeVar("T")


def resolve_dsn(settings: Settings, *, create: bool = False
                ) -> tuple[str, EmbeddedPostgres | None]:
    """The server's database: MEMHUB_DIRECT_DATABASE_URL (the same database without a pooler:
    migrations, purge, export and import run whole transactions of their own and set session
    state) or DATABASE_URL, or the embedded cluster in MEMHUB_DATA_DIR (attached to if running,
    started for the duration of the command if not). NO_DATABASE when MEMHUB_DATA_DIR holds
    no cluster, unless `create` (migrate): a mistyped directory must not become an empty
    database that every later command then reads as the server's."""
    direct = direct_dsn(settings)
    if direct is not None:
        return direct, None
    if settings.database_url is not None:
        return settings.database_url.get_secret_value(), None
    from ..storage.postgres.embedded import EmbeddedPostgres

    cluster = EmbeddedPostgres(settings.data_dir)
    if not create and not cluster.exists():
        raise NoDatabase(f"no memhub database at {cluster.data_dir} (MEMHUB_DATA_DIR)")
    return cluster.start(), cluster


def cli_actor() -> Actor:
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers): still say it came from the CLI
        user = "unknown"
    return Actor(f"cli:{user}", "local")


def pending_migrations(dsn: str) -> list[str]:
    """The migrations not applied yet; NO_DATABASE when none ever was (a database memhub has
    never run on: most likely the wrong one)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if row is None or not row[0]:
            raise NoDatabase(f"no memhub database at {_where(conn)}")
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    return [v for v, _, _ in migration_files() if v not in done]


def _where(conn: Any) -> str:
    """host:port/database (a socket's directory for host), never the user or password."""
    info = conn.info
    place = info.host if info.host.startswith("/") else f"{info.host}:{info.port}"
    return f"{place}/{info.dbname}"


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def fail(args: argparse.Namespace, message: str, code: str = "ERROR",
         status: int = EXIT_ERROR) -> int:
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


def needs_confirmation(args: argparse.Namespace, what: str,
                       remedy: str = "pass --yes") -> int | None:
    """None to go ahead; otherwise the exit status to stop with."""
    if args.yes:
        return None
    answer = confirm(f"{what}?")
    if answer is None:
        return fail(
            args,
            f"refusing to {what} without confirmation: no input to ask on; {remedy}",
            "CONFIRMATION_REQUIRED",
            EXIT_USAGE,
        )
    if not answer:
        return fail(args, "aborted", "ABORTED", EXIT_ABORTED)
    return None


async def _with_backend(settings: Settings, dsn: str,
                        fn: Callable[[PostgresBackend], Awaitable[T]]) -> T:
    from ..storage.postgres.backend import PostgresBackend

    small = settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 2})
    backend = PostgresBackend(small, dsn)
    await backend.open()
    try:
        return await fn(backend)
    finally:
        await backend.close()


def run_store(args: argparse.Namespace, settings: Settings,
              fn: Callable[[PostgresBackend], Awaitable[T]],
              render: Callable[[T], int | None]) -> int:
    """Run `fn` against the server's store and print its result with `render` (which may
    return an exit status); refused where there is no memhub database and while migrations
    are pending, a memhub error printed with its code and remedy."""
    try:
        dsn, cluster = resolve_dsn(settings)
    except MemhubError as err:
        return fail(args, f"{err.message} ({err.remedy})", err.code)
    try:
        try:
            pending = pending_migrations(dsn)
            if pending:
                return fail(
                    args,
                    f"the database has unapplied migrations ({', '.join(pending)}); "
                    "run `memhub-admin migrate` first",
                    "NOT_MIGRATED",
                )
            result = asyncio.run(_with_backend(settings, dsn, fn))
        except MemhubError as err:
            return fail(args, f"{err.message} ({err.remedy})", err.code)
        code = render(result)
        return EXIT_OK if code is None else code
    finally:
        if cluster is not None:
            cluster.stop()
