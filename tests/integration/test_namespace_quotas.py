"""A namespace's quota (migration 0042), attacked through the backend and in raw SQL: a write
that would pass it is refused QUOTA_EXCEEDED having written nothing (no memory, revision,
embedding job, change-feed entry or idempotency record); shrinking is always allowed; the
counters agree with a recount after every kind of write; only the operator sets a quota."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memhub.errors import QuotaExceeded
from memhub.storage.admin import Actor
from memhub.storage.postgres.operator.purge import PostgresPurge
from memhub.storage.principal import Principal
from memhub.storage.purge import check_target
from tests.support.memories import DESKTOP, NS, open_backend

OPERATOR = Actor("cli:test", "local")
OTHER = "beta"


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as backend:
        yield backend


def footprint(dsn: str, namespace: str = NS) -> dict[str, int]:
    """Every row a write leaves in a namespace, counted as the owner (no RLS)."""
    with psycopg.connect(dsn) as conn:
        return {table: conn.execute(f"SELECT count(*) FROM {table} WHERE namespace = %s",
                                    [namespace]).fetchone()[0]
                for table in ("memories", "memory_revisions", "embedding_jobs", "change_feed",
                              "idempotency_keys", "artifacts")}


def counters(dsn: str, namespace: str = NS) -> tuple[tuple[int, int], tuple[int, int]]:
    """(the quota's counters, a recount from the rows)."""
    with psycopg.connect(dsn) as conn:
        kept = conn.execute("SELECT used_memories, used_bytes FROM namespace_quotas"
                            " WHERE namespace = %s", [namespace]).fetchone()
        counted = conn.execute("SELECT memories, bytes FROM memhub_namespace_use(%s)",
                               [namespace]).fetchone()
    return tuple(kept), tuple(counted)


async def remember(backend, content: str, **kw: Any) -> dict[str, Any]:
    return (await backend.remember(DESKTOP, NS, content=content, **kw))["memory"]


async def test_a_remember_past_the_memory_quota_is_refused_and_writes_nothing(backend, db_dsn):
    await remember(backend, "The queue is Redis.")
    await remember(backend, "Deploys go out on Tuesdays.")
    quota = await backend.set_namespace_quota(OPERATOR, NS, max_memories=2, max_bytes=None)
    assert (quota["memories"], quota["max_memories"], quota["max_bytes"]) == (2, 2, None)
    before = footprint(db_dsn)
    with pytest.raises(QuotaExceeded) as refused:
        await remember(backend, "A third memory.", client_request_id="third-1")
    err = refused.value
    assert err.code == "QUOTA_EXCEEDED" and "forget" in err.remedy.lower()
    assert err.details == {"limit": "memories", "max": 2, "used": 2, "adding": 1}
    assert footprint(db_dsn) == before
    # The same key retried is refused again, never replayed as a success.
    with pytest.raises(QuotaExceeded):
        await remember(backend, "A third memory.", client_request_id="third-1")
    # Another namespace has no quota.
    await backend.remember(DESKTOP, OTHER, content="A third memory.")


async def test_a_namespace_at_its_quota_may_supersede_and_forgetting_makes_room(backend):
    old = await remember(backend, "The queue is Redis.")
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=1, max_bytes=None)
    new = await remember(backend, "The queue is PostgreSQL.", supersedes=[old["id"]])
    with pytest.raises(QuotaExceeded):
        await remember(backend, "Deploys go out on Tuesdays.")
    await backend.forget(DESKTOP, NS, new["id"], "moved")
    await remember(backend, "Deploys go out on Tuesdays.")
    assert (await backend.namespace_quota(NS))["memories"] == 1


async def test_growing_past_the_byte_quota_is_refused_and_shrinking_is_not(backend, db_dsn):
    memory = await remember(backend, "x" * 100, questions=["why?"], metadata={"a": 1})
    use = (await backend.namespace_quota(NS))["bytes"]
    assert use == 100 + len("why?") + len('{"a": 1}')
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=None, max_bytes=use + 50)
    before = footprint(db_dsn)
    with pytest.raises(QuotaExceeded) as refused:
        await remember(backend, "y" * 51)
    assert refused.value.details == {"limit": "bytes", "max": use + 50, "used": use,
                                     "adding": 51}
    with pytest.raises(QuotaExceeded):
        await backend.revise(DESKTOP, NS, memory["id"], 1, content="x" * 151)
    assert footprint(db_dsn) == before
    await backend.revise(DESKTOP, NS, memory["id"], 1, content="x" * 150)  # exactly at it
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=None, max_bytes=10)
    # Over a quota lowered below its use, a namespace may still shrink.
    await backend.revise(DESKTOP, NS, memory["id"], 2, content="short")
    with pytest.raises(QuotaExceeded):
        await backend.revise(DESKTOP, NS, memory["id"], 3, content="longer")


async def test_artifacts_count_against_the_byte_quota(backend, db_dsn):
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=None, max_bytes=1000)
    await backend.artifact_put(DESKTOP, NS, name="a.bin", content=b"a" * 600,
                               media_type="application/octet-stream")
    with pytest.raises(QuotaExceeded) as refused:
        await backend.artifact_put(DESKTOP, NS, name="b.bin", content=b"b" * 600,
                                   media_type="application/octet-stream")
    assert refused.value.details["limit"] == "bytes"
    with psycopg.connect(db_dsn) as conn:
        blobs = conn.execute("SELECT count(*) FROM artifact_blobs").fetchone()[0]
    assert blobs == 1  # the refused upload's bytes rolled back with it
    assert counters(db_dsn) == ((0, 600), (0, 600))


async def test_the_counters_agree_with_a_recount_after_every_kind_of_write(backend, db_dsn):
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=100, max_bytes=10**6)
    a = await remember(backend, "alpha memory", metadata={"k": "v"})
    b = await remember(backend, "beta memory", questions=["what is beta?"])
    await remember(backend, "alpha memory")  # deduplicated: nothing new
    await backend.revise(DESKTOP, NS, b["id"], 1, content="beta memory, revised",
                         questions=[])
    c = await remember(backend, "gamma memory", supersedes=[a["id"]])
    d = await remember(backend, "delta memory", expires_at="2999-01-01T00:00:00Z")
    await backend.forget(DESKTOP, NS, c["id"], "wrong")
    await backend.artifact_put(DESKTOP, NS, name="f.txt", content=b"file",
                               media_type="text/plain")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE memories SET expires_at = now() - interval '1 s' WHERE id = %s",
                     [d["id"]])
    assert await backend.expire_due() == 1
    await PostgresPurge(db_dsn).purge(check_target("memory", b["id"]), reason="test",
                                      actor=OPERATOR)
    kept, counted = counters(db_dsn)
    assert kept == counted == (0, 4)


async def test_a_cleared_quota_leaves_no_counters_and_refuses_nothing(backend, db_dsn):
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=0, max_bytes=None)
    with pytest.raises(QuotaExceeded):
        await remember(backend, "anything")
    cleared = await backend.set_namespace_quota(OPERATOR, NS, max_memories=None,
                                                max_bytes=None)
    assert (cleared["max_memories"], cleared["max_bytes"], cleared["memories"]) == (
        None, None, 0)
    await remember(backend, "anything")
    assert await backend.list_namespace_quotas() == []


async def test_stats_shows_a_tokens_namespaces_quotas_only(backend):
    await backend.set_namespace_quota(OPERATOR, NS, max_memories=5, max_bytes=None)
    await backend.set_namespace_quota(OPERATOR, OTHER, max_memories=None, max_bytes=1000)
    await remember(backend, "one")
    scoped = Principal(token_id=3, surface="cursor", namespaces=(OTHER,))
    assert (await backend.stats(DESKTOP))["quotas"] == {
        NS: {"max_memories": 5, "memories": 1, "bytes": 3},
        OTHER: {"max_bytes": 1000, "memories": 0, "bytes": 0}}
    assert (await backend.stats(scoped))["quotas"] == {
        OTHER: {"max_bytes": 1000, "memories": 0, "bytes": 0}}


def test_a_tenant_transaction_cannot_set_its_quota_or_touch_its_counters(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT set_config('memhub.namespaces', '*', true)")
            conn.execute("SELECT memhub_set_quota('acme', 1, NULL, 'operator')")
        conn.execute("SET ROLE memhub_app")
        for statement in (
            "SELECT memhub_set_quota('acme', 1000, NULL, 'tenant')",
            "SELECT memhub_quota_charge('acme', -1000, -1000)",
            "UPDATE namespace_quotas SET used_memories = 0, max_memories = NULL",
            "DELETE FROM namespace_quotas",
            "INSERT INTO namespace_quotas (namespace, max_memories, set_by)"
            " VALUES ('acme', 5, 'tenant')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute("SELECT set_config('memhub.namespaces', 'acme', true)")
                conn.execute(statement)
        conn.execute("RESET ROLE")
        row = conn.execute("SELECT max_memories, used_memories, set_by FROM namespace_quotas"
                           ).fetchall()
    assert row == [(1, 0, "operator")]
