"""Shared fixtures: a real PostgreSQL (embedded unless DATABASE_URL is set), a migrated template
database cloned per test, and real memhub servers over HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

# No test fetches the embedding model by accident: every server it starts, in this process or
# another (tests/support/server.py passes it on), is offline unless the test says otherwise
# (tests/e2e/test_model_setup.py). Set before anything imports huggingface_hub, which reads
# HF_HUB_OFFLINE once.
os.environ["MEMHUB_EMBED_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"

from memhub.config import Settings  # noqa: E402
from tests.support import db  # noqa: E402
from tests.support.server import free_port, thread_server  # noqa: E402

MODEL_PATH = os.environ.get("MEMHUB_EMBED_MODEL_PATH")


@pytest.fixture(scope="session")
def admin_dsn(tmp_path_factory: pytest.TempPathFactory):
    url = os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    from memhub.storage.postgres.embedded import EmbeddedPostgres

    cluster = EmbeddedPostgres(tmp_path_factory.mktemp("memhub-pg"))
    dsn = cluster.start()
    try:
        yield dsn
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def template_db(admin_dsn: str):
    name = db.create_template(admin_dsn)
    yield name
    db.drop(admin_dsn, name)


@pytest.fixture
def db_dsn(admin_dsn: str, template_db: str):
    """A fresh, migrated database of this test's own."""
    name = db.clone(admin_dsn, template_db)
    try:
        yield db.with_db(admin_dsn, name)
    finally:
        db.drop(admin_dsn, name)


@pytest.fixture(scope="module")
def module_dsn(admin_dsn: str, template_db: str):
    """A fresh, migrated database shared by one module's tests (a world built once, read by
    many tests)."""
    name = db.clone(admin_dsn, template_db)
    try:
        yield db.with_db(admin_dsn, name)
    finally:
        db.drop(admin_dsn, name)


@pytest.fixture
def db_conn(db_dsn: str):
    """An owner (superuser) connection to the test database, for arranging and inspecting."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        yield conn


WEB_TOKEN = "mh_test_web_token_0123456789abcdef"


def make_settings(dsn: str, tmp: Path, **overrides) -> Settings:
    values = {
        "database_url": dsn,
        "mcp_auth_token": WEB_TOKEN,
        "admin_password": "correct horse battery staple",
        "data_dir": tmp,
        "embed_model_path": MODEL_PATH,
        "pool_max_size": 10,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def settings(db_dsn: str, tmp_path: Path) -> Settings:
    return make_settings(db_dsn, tmp_path)


@pytest.fixture
def server(settings: Settings):
    """A real memhub over HTTP on a loopback port, on this test's own database."""
    with thread_server(settings) as running:
        yield running


@pytest.fixture
def own_port_server(db_dsn: str, tmp_path: Path):
    """As `server`, configured with the port it listens on, so the OAuth pages it sends a
    client to are its own."""
    port = free_port()
    with thread_server(make_settings(db_dsn, tmp_path, port=port), port=port) as running:
        yield running


@pytest.fixture
def tokens(db_dsn: str, server) -> dict[str, str]:
    """Known plaintext tokens: web (seeded by MCP_AUTH_TOKEN) plus two scoped test tokens."""
    return {
        "web": WEB_TOKEN,
        "cursor": db.insert_token(db_dsn, "cursor"),
        "desktop-cli": db.insert_token(db_dsn, "desktop-cli"),
    }
