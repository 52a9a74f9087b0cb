"""`PostgresBackend`: the StorageBackend implemented in raw psycopg SQL.

Each area lives in its own module as a mixin over `PgCore` (pool, scoped transactions,
retries); this class only composes them.
"""

from __future__ import annotations

from storage.base import StorageBackend
from storage.pg_admin import AdminStore
from storage.pg_artifacts import ArtifactStore
from storage.pg_core import PgCore
from storage.pg_handoffs import HandoffStore
from storage.pg_memories import MemoryStore
from storage.pg_scope import TokenScope
from storage.pg_search import SearchStore
from storage.pg_sessions import SessionStore


class PostgresBackend(
    TokenScope, AdminStore, MemoryStore, SearchStore, HandoffStore, SessionStore,
    ArtifactStore, PgCore, StorageBackend,
):
    pass
