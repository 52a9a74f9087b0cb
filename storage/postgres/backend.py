"""`PostgresBackend`: the StorageBackend implemented in raw psycopg SQL.

Each area lives in its own module as a mixin over `PgCore` (pool, scoped transactions,
retries); this class only composes them.
"""

from __future__ import annotations

from ..base import StorageBackend
from ..retention import GcBackend
from .admin import AdminStore
from .artifacts import ArtifactStore
from .context import ContextStore
from .core import PgCore
from .gc import GcStore
from .handoffs import HandoffStore
from .memories import MemoryStore
from .memory_reads import MemoryReads
from .scope import TokenScope
from .search import SearchStore
from .sessions import SessionStore
from .stats import StatsStore
from .tokens import TokenStore
from .vitals import VitalsStore


class PostgresBackend(
    TokenScope, TokenStore, StatsStore, AdminStore, MemoryStore, MemoryReads, SearchStore,
    ContextStore, HandoffStore, SessionStore, ArtifactStore, VitalsStore, GcStore, PgCore,
    StorageBackend, GcBackend,
):
    pass
