"""`PostgresBackend`: the StorageBackend implemented in raw psycopg SQL.

Each store subclasses `PgCore` (core.py: settings, embedder, pool, the scoped transaction,
retries, durability), or the store of a lower area whose methods it calls (`RecallStore` over
`SearchStore`, `GateStore` over `RecallStore`), so what a store relies on is declared where a
type checker can see it. This class only composes the stores, by area: memories, retrieval,
work, operator (docs/architecture.md, The storage boundary).
"""

from __future__ import annotations

from ..base import StorageBackend
from ..retention import GcBackend
from .core import PgCore
from .idempotency import IdempotentWrites
from .memories.as_of_reads import AsOfReads
from .memories.changes import ChangeFeedStore
from .memories.claims import ClaimStore
from .memories.forget import ForgetStore
from .memories.memories import MemoryStore
from .memories.memory_reads import MemoryReads
from .memories.profiles import ProfileStore
from .memories.trust import TrustStore
from .operator.activity import ActivityStore
from .operator.admin import AdminStore
from .operator.admin_sessions import AdminSessionStore
from .operator.gc import GcStore
from .operator.github_grants import GitHubGrantStore
from .operator.health import HealthStore
from .operator.limits import LimitsStore
from .operator.oauth import OAuthStore
from .operator.stats import StatsStore
from .operator.tokens import TokenStore
from .operator.vitals import VitalsStore
from .retrieval.as_of import AsOfStore
from .retrieval.context import ContextStore
from .retrieval.recall import RecallStore
from .retrieval.search import SearchStore
from .server_secrets import ServerSecrets
from .work.artifacts import ArtifactStore
from .work.bootstrap import BootstrapStore
from .work.curation import CurationStore
from .work.gate_review import GateReviewStore
from .work.handoffs import HandoffStore
from .work.sessions import SessionStore


class PostgresBackend(
    # operator
    TokenStore, StatsStore, AdminStore, AdminSessionStore, OAuthStore, GcStore, VitalsStore,
    HealthStore, GitHubGrantStore, ActivityStore, LimitsStore,
    # work
    GateReviewStore, HandoffStore, SessionStore, ArtifactStore, BootstrapStore, CurationStore,
    # retrieval
    AsOfStore, ContextStore, RecallStore, SearchStore,
    # memories
    ForgetStore, MemoryStore, MemoryReads, AsOfReads, TrustStore, ProfileStore, ClaimStore,
    ChangeFeedStore,
    # engine
    ServerSecrets, IdempotentWrites, PgCore,
    StorageBackend, GcBackend,
):
    pass
