"""Which DATABASE_URLs MEMHUB_DB_POOLER=auto takes for a transaction pooler, and what the pool
does with the answer (no database: a pool is built closed)."""

from __future__ import annotations

import pytest

from memhub.config import Settings
from memhub.storage.postgres.core import PgCore
from memhub.storage.postgres.database_url import transaction_pooled

POOLED = [
    "postgresql://u:p@db.example.com:6432/memhub",  # PgBouncer's default port
    "postgresql://u.ref:p@aws-0-eu-central-1.pooler.supabase.com:6543/postgres",
    "postgresql://u:p@ep-cool-name-123456-pooler.us-east-2.aws.neon.tech/neondb?sslmode=require",
    "host=a.example.com,b.example.com port=5432,6432 dbname=memhub",
]
DIRECT = [
    "postgresql://u:p@db.example.com:5432/memhub",
    "postgresql://u:p@db.example.com/memhub",
    "postgresql://u.ref:p@aws-0-eu-central-1.pooler.supabase.com:5432/postgres",  # session
    "postgresql://u:p@ep-cool-name-123456.us-east-2.aws.neon.tech/neondb?sslmode=require",
    "postgresql://postgres:@/postgres?host=/var/lib/memhub/pgdata",  # the embedded cluster
    "not a connection string",
]


@pytest.mark.parametrize("dsn", POOLED)
def test_auto_takes_the_well_known_pooler_addresses_for_a_transaction_pooler(dsn):
    assert transaction_pooled("auto", dsn)


@pytest.mark.parametrize("dsn", DIRECT)
def test_auto_takes_any_other_address_for_a_direct_server(dsn):
    assert not transaction_pooled("auto", dsn)


@pytest.mark.parametrize("dsn", POOLED[:1] + DIRECT[:1])
def test_an_explicit_setting_wins_over_the_address(dsn):
    assert transaction_pooled("transaction", dsn)
    assert not transaction_pooled("none", dsn)


def _core(dsn: str, **settings) -> PgCore:
    return PgCore(Settings(database_url=dsn, **settings), dsn)


def test_behind_a_pooler_nothing_is_prepared_and_the_worker_polls_without_a_direct_url():
    core = _core("postgresql://u:p@db.example.com:6432/memhub")
    assert core.pooled and core.listen_dsn is None
    assert core.pool.kwargs["prepare_threshold"] is None


def test_behind_a_pooler_the_worker_listens_on_the_direct_url():
    direct = "postgresql://u:p@db.example.com:5432/memhub"
    core = _core("postgresql://u:p@db.example.com:6432/memhub", direct_database_url=direct)
    assert core.listen_dsn == direct


def test_a_direct_server_keeps_prepared_statements_and_listens_on_the_pool_url():
    dsn = "postgresql://u:p@db.example.com:5432/memhub"
    core = _core(dsn)
    assert not core.pooled and core.listen_dsn == dsn
    assert "prepare_threshold" not in core.pool.kwargs
