"""Real PostgreSQL for tests: one cluster per session, a migrated template, a clone per test."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memhub.storage.postgres.migrate import apply_migrations, migration_files
from memhub.storage.postgres.operator.tokens import hash_token, token_prefix


def with_db(dsn: str, dbname: str) -> str:
    return make_conninfo(dsn, dbname=dbname)


def create_template(admin_dsn: str) -> str:
    name = f"memhub_tpl_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    apply_migrations(with_db(admin_dsn, name))
    return name


def clone(admin_dsn: str, template: str) -> str:
    name = f"memhub_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return name


def drop(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def dbname_of(dsn: str) -> str:
    return conninfo_to_dict(dsn).get("dbname", "postgres")


def insert_token(
    dsn: str,
    surface: str,
    *,
    namespaces: list[str] | None = None,
    read_only: bool = False,
    kind: str = "scoped",
    tool_profile: str = "full",
) -> str:
    """Create a token straight in the database and return its plaintext."""
    token = "mh_test_" + uuid.uuid4().hex
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO api_tokens (surface, kind, token_hash, prefix, namespaces, read_only,"
            " tool_profile) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [surface, kind, hash_token(token), token_prefix(token), namespaces, read_only,
             tool_profile],
        )
    return token


def grant_repo(dsn: str, namespace: str, repo: str) -> None:
    """Grant a namespace a GitHub repository as the operator does (memhub_github_grant, in a
    transaction scoped to every namespace)."""
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', true)")
        conn.execute("SELECT memhub_github_grant(%s, %s, true, 'test')", [namespace, repo])


@contextmanager
def migrated_before(admin_dsn: str, version: str, scratch: Path) -> Iterator[str]:
    """A new database migrated up to, not including, `version` (to arrange rows as an older
    memhub left them, then apply the rest); dropped on the way out."""
    name = f"memhub_mig_{version}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = with_db(admin_dsn, name)
    before = scratch / f"before-{version}"
    before.mkdir()
    for number, _, path in migration_files():
        if number < version:
            shutil.copy(path, before / path.name)
    try:
        apply_migrations(dsn, before)
        yield dsn
    finally:
        drop(admin_dsn, name)
