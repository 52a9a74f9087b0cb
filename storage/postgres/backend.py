"""`PostgresBackend`: the StorageBackend implemented in raw psycopg SQL.

Each area lives in its own module as a mixin over `PgCore` (pool, scoped transactions,
retries); this class only composes them.
"""

from __future__ import annotations

from ..base import StorageBackend
from ..retention import GcBackend
from .admin import AdminStore
from .artifacts import ArtifactStore
from .bootstrap import BootstrapStore
from .changes import ChangeFeedStore
from .claims import ClaimStore
from .context import ContextStore
from .core import PgCore
from .curation import CurationStore
from .gate import GateStore
from .gc import GcStore
from .handoffs import HandoffStore
from .health import HealthStore
from .memories import MemoryStore
from .memory_reads import MemoryReads
from .oauth import OAuthStore
from .profiles import ProfileStore
from .recall import RecallStore
from .scope import TokenScope
from .search import SearchStore
from .sessions import SessionStore
from .stats import StatsStore
from .tokens import TokenStore
from .trust import TrustStore
from .vitals import VitalsStore


class PostgresBackend(
    TokenScope, TokenStore, StatsStore, AdminStore, MemoryStore, MemoryReads, SearchStore,
    BootstrapStore,
    ContextStore, HandoffStore, SessionStore, ArtifactStore, VitalsStore, GcStore,
    GateStore, PgCore,
    ProfileStore, OAuthStore, ChangeFeedStore, TrustStore, HealthStore, RecallStore, ClaimStore,
    CurationStore,
    StorageBackend, GcBackend,
):
    pass
