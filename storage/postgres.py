"""`PostgresBackend`: the StorageBackend implemented in raw psycopg SQL.

Each area lives in its own module as a mixin over `PgCore` (pool, scoped transactions,
retries); this class only composes them.
"""

from __future__ import annotations

from storage.base import StorageBackend
from storage.pg_core import PgCore


class PostgresBackend(PgCore, StorageBackend):
    pass
