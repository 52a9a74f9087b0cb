"""memhub's storage behind a real PgBouncer in transaction pooling mode.

With one server connection (pool_size=1) every transaction of every memhub connection runs, in
turn, on the same server session: whatever one of them left on the session (a role, a scope, a
timeout, a prepared statement, a LISTEN, a session lock) is there for the next client, who may
be another tenant's request. So after memhub's work a raw client of the same PgBouncer reads
the session and must find it as a fresh login leaves it.
"""

from __future__ import annotations

import asyncio
import threading

import psycopg
import pytest

from bench.pgbouncer import fresh_session_state, pgbouncer
from memhub.errors import MemhubError
from memhub.storage.postgres.core import APP_ROLE
from memhub.storage.postgres.database_url import check_database_url
from memhub.storage.postgres.migrate import apply_migrations, migration_files
from memhub.storage.postgres.retrieval import lexicon
from memhub.storage.postgres.scope import bind_caller
from memhub.storage.principal import Principal
from tests.conftest import make_settings
from tests.support import db
from tests.support.memories import DESKTOP, open_backend

ALPHA, BETA = "alpha-proj", "beta-proj"


@pytest.fixture
def bouncer(admin_dsn):
    with pgbouncer(admin_dsn, pool_size=1) as running:
        yield running


@pytest.fixture
async def pooled(db_dsn, bouncer, tmp_path):
    async with open_backend(bouncer.dsn(db_dsn), tmp_path, db_pooler="transaction",
                            pool_min_size=3, pool_max_size=6) as backend:
        yield backend


async def seed(backend) -> None:
    for ns in (ALPHA, BETA):
        await backend.remember(DESKTOP, ns, content=f"note of {ns}")


async def test_interleaved_tenants_on_one_pooled_server_session_each_see_only_their_own(
    pooled, bouncer, db_dsn
):
    await seed(pooled)
    seen: list[tuple[str, dict]] = []

    async def look(conn):
        cur = await conn.execute(
            "SELECT current_user AS who, current_setting('memhub.namespaces') AS scope,"
            " pg_backend_pid() AS pid,"
            " (SELECT array_agg(DISTINCT namespace) FROM memories) AS visible")
        row = await cur.fetchone()
        await asyncio.sleep(0)  # let the other tenant's requests queue behind this one
        return row

    async def tenant(ns: str, rounds: int) -> None:
        bind_caller(Principal(token_id=1, surface="cursor", namespaces=(ns,)))
        for _ in range(rounds):
            seen.append((ns, await pooled._run("*", look, retry_safe=True)))

    await asyncio.gather(*(tenant(ns, 10) for ns in (ALPHA, BETA, ALPHA, BETA)))
    assert len(seen) == 40
    for ns, row in seen:
        assert (row["who"], row["scope"], row["visible"]) == (APP_ROLE, ns, [ns])
    assert len({row["pid"] for _, row in seen}) == 1  # one server session served them all
    assert await asyncio.to_thread(bouncer.server_pids, db_dsn) == [seen[0][1]["pid"]]


async def test_a_read_only_callers_writes_are_refused_by_the_database_behind_a_pooler(
    pooled
):
    """Interleaved with a writer of the same namespace on one server session: the flag is
    the reader's transaction's alone (migration 0013 refuses its UPDATE)."""
    await seed(pooled)
    await lexicon.refresh(pooled, ALPHA)

    async def write(conn):
        cur = await conn.execute("UPDATE lexicon_state SET docs = docs RETURNING 1")
        return len(await cur.fetchall())  # no trigger on this table: RLS alone decides

    async def as_caller(principal: Principal, rounds: int = 5) -> list:
        bind_caller(principal)
        out = []
        for _ in range(rounds):
            try:
                out.append(await pooled._run(ALPHA, write, retry_safe=False))
            except MemhubError as err:
                out.append(err.__cause__.sqlstate if err.__cause__ else err.code)
        return out

    reader = Principal(token_id=1, surface="cursor", namespaces=(ALPHA,), read_only=True)
    writer = Principal(token_id=2, surface="cursor", namespaces=(ALPHA,))
    refused, written = await asyncio.gather(
        asyncio.create_task(as_caller(reader)), asyncio.create_task(as_caller(writer)))
    assert refused == ["42501"] * 5  # insufficient_privilege: the row-level security check
    assert written == [1] * 5


async def test_nothing_memhub_sets_outlives_its_transaction_on_a_pooled_server_session(
    pooled, bouncer, db_dsn, admin_dsn
):
    """The role, the scope, the read-only flag and the statement timeout are transaction-local,
    and no statement is prepared on the session, however often it is run."""
    await seed(pooled)
    token = db.insert_token(db_dsn, "cursor", namespaces=[ALPHA], read_only=True)

    async def read(conn):
        cur = await conn.execute("SELECT count(*) AS n FROM memories")
        return (await cur.fetchone())["n"]

    async def caller(principal: Principal | None) -> list[int]:
        bind_caller(principal)
        return [await pooled._run(ALPHA, read, retry_safe=True) for _ in range(8)]

    principals = [None, Principal(token_id=1, surface="cursor", namespaces=(ALPHA,),
                                  read_only=True)]
    counts = await asyncio.gather(*(asyncio.create_task(caller(p)) for p in principals * 3))
    assert all(c == [1] * 8 for c in counts)
    for _ in range(8):  # the token gate's lookup, outside any transaction
        assert (await pooled.authenticate(token)).namespaces == (ALPHA,)
    assert len(await asyncio.to_thread(bouncer.server_pids, db_dsn)) == 1
    assert await asyncio.to_thread(bouncer.session_state, db_dsn) == \
        fresh_session_state(admin_dsn)


async def test_a_statement_outside_a_transaction_runs_as_the_app_role_under_the_timeout(
    pooled, bouncer, db_dsn, admin_dsn
):
    async with pooled.connection() as conn:
        row = await pooled.fetchone_outside_tx(
            conn, "SELECT current_user AS who, current_setting('statement_timeout') AS t,"
                  " %(echo)s::bytea AS echo", {"echo": b"\x00'\\%"})
    assert (row["who"], row["t"], bytes(row["echo"])) == (APP_ROLE, "15s", b"\x00'\\%")
    assert await asyncio.to_thread(bouncer.session_state, db_dsn) == \
        fresh_session_state(admin_dsn)


async def test_the_embedding_worker_does_not_listen_through_a_pooler(pooled, db_dsn, tmp_path):
    """LISTEN needs a session of its own: through the pooler none, with a direct URL that."""
    assert pooled.pooled and pooled.listen_dsn is None
    async with open_backend(pooled.dsn, tmp_path, db_pooler="transaction",
                            direct_database_url=db_dsn) as direct:
        assert direct.listen_dsn == db_dsn


def test_migrations_through_a_transaction_pooler_apply_each_file_once_and_hold_no_lock(
    admin_dsn
):
    """Four processes migrating one fresh database through PgBouncer (two server sessions, so
    a client's consecutive statements may land on either): each file applied once, and no
    advisory lock left behind on a session."""
    name = f"memhub_mig_pooled_{id(object())}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = db.with_db(admin_dsn, name)
    results: list[list[str]] = []
    errors: list[BaseException] = []
    try:
        with pgbouncer(admin_dsn, pool_size=2) as bouncer:
            def run():
                try:
                    results.append(apply_migrations(bouncer.dsn(dsn)))
                except BaseException as exc:  # surfaced below
                    errors.append(exc)

            threads = [threading.Thread(target=run) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert not any(t.is_alive() for t in threads)
            assert errors == []
            assert sorted(v for r in results for v in r) == [v for v, _, _ in migration_files()]
            assert apply_migrations(bouncer.dsn(dsn)) == []
            # Read while PgBouncer still holds its server sessions open.
            with psycopg.connect(dsn, autocommit=True) as conn:
                held = conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND database = (SELECT oid FROM pg_database"
                    "                  WHERE datname = current_database())").fetchone()[0]
            assert held == 0
    finally:
        db.drop(admin_dsn, name)


def test_an_unusable_direct_url_is_named_before_start_up_without_its_password(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, direct_database_url=(
        "postgresql://memhub:hunter2-secret@127.0.0.1:1/memhub?connect_timeout=2"))
    problem = check_database_url(settings)
    assert problem is not None and "MEMHUB_DIRECT_DATABASE_URL" in problem
    assert "hunter2-secret" not in problem
    assert check_database_url(make_settings(db_dsn, tmp_path)) is None
