"""A client_request_id belongs to the token that sent it (migration 0021): two tokens of one
surface never replay, or even learn of, each other's stored answers."""

from __future__ import annotations

import os

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memhub.errors import Conflict, IdempotencyMismatch
from memhub.storage.postgres.idempotency import request_hash
from memhub.storage.postgres.migrate import MIGRATIONS_DIR, apply_migrations
from memhub.storage.principal import Principal
from tests.support import db
from tests.support.memories import open_backend

SHARED = "shared"
A = Principal(token_id=101, surface="cursor", namespaces=(SHARED, "team-a"))
B = Principal(token_id=102, surface="cursor", namespaces=(SHARED,))
C = Principal(token_id=105, surface="cursor", namespaces=(SHARED,))
KEY = "retry-42"
MIGRATION_0038 = MIGRATIONS_DIR / "0038_lost_revise_is_an_error.sql"


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with open_backend(db_dsn, tmp_path) as b:
        yield b


async def test_a_second_token_of_the_surface_writes_its_own_handoff_under_the_same_key(
    backend
):
    args = {"title": "Plan", "body": "Step one", "client_request_id": KEY}
    first = await backend.handoff_save(A, SHARED, **args)
    other = await backend.handoff_save(B, SHARED, **args)
    retried = await backend.handoff_save(A, SHARED, **args)
    assert first["outcome"] == other["outcome"] == "created"
    assert other["handoff"]["id"] != first["handoff"]["id"]
    assert retried["outcome"] == "replayed"
    assert retried["handoff"]["id"] == first["handoff"]["id"]
    assert (await backend.handoff_save(B, SHARED, **args))["handoff"]["id"] == \
        other["handoff"]["id"]


@pytest.mark.parametrize("write", ["remember", "session_create"])
async def test_another_tokens_key_is_neither_replayed_nor_reported_as_used(backend, write):
    """The attack: B reuses A's key with its own arguments (IDEMPOTENCY_MISMATCH would tell B
    the key was used), C with A's arguments (a replay would hand C A's stored answer)."""
    if write == "remember":
        def call(who, text):
            return backend.remember(who, SHARED, content=text, client_request_id=KEY)
    else:
        def call(who, text):
            return backend.session_create(who, SHARED, title=text, client_request_id=KEY)
    made = "memory" if write == "remember" else "session"
    mine = await call(A, "A's private note")
    different = await call(B, "B's own note")
    assert different["outcome"] == "created"
    assert "A's private note" not in str(different)
    same = await call(C, "A's private note")
    assert same["outcome"] in ("created", "deduplicated")  # its own write, not a replay
    assert "original_outcome" not in same
    again = await call(A, "A's private note")
    assert again["outcome"] == "replayed" and again["original_outcome"] == "created"
    assert again[made]["id"] == mine[made]["id"]
    with pytest.raises(IdempotencyMismatch):
        await call(A, "B's own note")


async def test_tokens_on_different_namespaces_keep_apart_keys(backend):
    only_a = Principal(token_id=103, surface="cursor", namespaces=("team-a",))
    only_b = Principal(token_id=104, surface="cursor", namespaces=("team-b",))
    a = await backend.handoff_save(only_a, "team-a", title="t", body="a",
                                   client_request_id=KEY)
    b = await backend.handoff_save(only_b, "team-b", title="t", body="a",
                                   client_request_id=KEY)
    assert a["outcome"] == b["outcome"] == "created"


def _arrange_before_0021(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        def token(surface, kind, namespaces=None, revoked=False):
            return conn.execute(
                "INSERT INTO api_tokens (surface, kind, token_hash, prefix, namespaces,"
                " revoked_at) VALUES (%s, %s, %s, 'mh_x', %s,"
                " CASE WHEN %s THEN now() END) RETURNING id",
                [surface, kind, os.urandom(32), namespaces, revoked]).fetchone()[0]

        ids = {
            "cursor": token("cursor", "surface"),
            "cursor-scoped": token("cursor", "scoped", ["p"]),
            "desktop-old": token("desktop-cli", "surface", revoked=True),
            "web": token("web", "surface", ["p"]),
        }
        for ns, surface, request_id in [("p", "cursor", "c1"), ("q", "cursor", "c2"),
                                        ("p", "desktop-cli", "d1"), ("p", "web", "w1"),
                                        ("q", "web", "w2")]:
            conn.execute(
                "INSERT INTO idempotency_keys (namespace, surface, request_id, operation,"
                " request_hash, response) VALUES (%s, %s, %s, 'remember', '\\x00', '{}')",
                [ns, surface, request_id])
    return ids


def test_migration_0021_gives_old_keys_to_their_surface_token_or_drops_them(admin_dsn,
                                                                             tmp_path):
    """An old record goes to its surface's active surface token when that token may see the
    namespace; the others (revoked writer, namespace outside the token) are dropped."""
    with db.migrated_before(admin_dsn, "0021", tmp_path) as dsn:
        ids = _arrange_before_0021(dsn)
        assert "0021" in apply_migrations(dsn)
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT namespace, request_id, token_id FROM idempotency_keys"
                                " ORDER BY request_id").fetchall()
            key = conn.execute(
                "SELECT array_agg(a.attname ORDER BY k.ord) FROM pg_index i"
                " CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)"
                " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
                " WHERE i.indrelid = 'idempotency_keys'::regclass AND i.indisprimary"
            ).fetchone()[0]
        assert rows == [("p", "c1", ids["cursor"]), ("q", "c2", ids["cursor"]),
                        ("p", "w1", ids["web"])]
        assert key == ["namespace", "token_id", "request_id"]


async def test_migration_0038_drops_stored_lost_revises_so_their_retry_is_the_error(
        admin_dsn, tmp_path):
    """Before 0038 a lost compare-and-set was stored as an answer under its key; a retry
    would have replayed it as a success-shaped "replayed". Now the key is gone and the retry
    runs the compare-and-set again: CONFLICT. A key that recorded a write stays. (Today's
    backend writes the rows, so the database has every migration; 0038's statement is then
    run on the key an older memhub would have stored.)"""
    with db.migrated_before(admin_dsn, "9999", tmp_path) as dsn:
        async with open_backend(dsn, tmp_path) as backend:
            mid = (await backend.remember(A, SHARED, content="v1"))["memory"]["id"]
            await backend.revise(A, SHARED, mid, 1, content="v2", client_request_id="won")
            lost = {"id": mid, "expected_revision": 1, "content": "v2 too", "title": None,
                    "tags": None}
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO idempotency_keys (namespace, surface, token_id, request_id,"
                    " operation, request_hash, response) VALUES (%s, %s, %s, 'lost', 'revise',"
                    " %s, %s)",
                    [SHARED, A.surface, A.token_id, request_hash("revise", lost),
                     Jsonb({"outcome": "conflict", "current_revision": 2})])
            with psycopg.connect(dsn) as conn, conn.transaction():
                conn.execute(MIGRATION_0038.read_text())
            with pytest.raises(Conflict) as err:
                await backend.revise(A, SHARED, mid, 1, content="v2 too",
                                     client_request_id="lost")
            kept = await backend.revise(A, SHARED, mid, 1, content="v2",
                                        client_request_id="won")
    assert err.value.details["current_revision"] == 2
    assert kept["outcome"] == "replayed" and kept["original_outcome"] == "revised"
