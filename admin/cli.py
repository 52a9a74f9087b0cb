"""memhub-admin: operator commands against the same database the server uses."""

from __future__ import annotations

import argparse
import sys

from config import Settings
from storage.migrate import apply_migrations


def resolve_dsn(settings: Settings):
    """The server's database: DATABASE_URL, or the embedded cluster in MEMHUB_DATA_DIR
    (attached to if running, started for the duration of the command if not)."""
    if settings.database_url is not None:
        return settings.database_url.get_secret_value(), None
    from storage.embedded import EmbeddedPostgres

    cluster = EmbeddedPostgres(settings.data_dir)
    return cluster.start(), cluster


def cmd_migrate(args, settings: Settings) -> int:
    dsn, cluster = resolve_dsn(settings)
    try:
        applied = apply_migrations(dsn)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"applied {len(applied)} migration(s): {', '.join(applied) or 'none pending'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memhub-admin", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply pending migrations").set_defaults(func=cmd_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args, Settings())


if __name__ == "__main__":
    sys.exit(main())
