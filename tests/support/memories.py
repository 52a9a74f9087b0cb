"""Helpers for memory tests: a backend on a test database and principals for two surfaces."""

from __future__ import annotations

from contextlib import asynccontextmanager

from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.principal import Principal
from tests.conftest import make_settings

DESKTOP = Principal(token_id=1, surface="desktop-cli", namespaces=None)
CURSOR = Principal(token_id=2, surface="cursor", namespaces=None)
NS = "acme"


@asynccontextmanager
async def open_backend(dsn: str, tmp_path, **overrides):
    backend = PostgresBackend(make_settings(dsn, tmp_path, **overrides), dsn)
    await backend.open()
    try:
        yield backend
    finally:
        await backend.close()
