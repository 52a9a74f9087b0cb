"""The admin store on a real PostgreSQL: token lifecycle, audit, login backoff, the shared
cookie secret, the overview, and the app role's privileges on the admin tables."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from contextlib import asynccontextmanager

import psycopg
import pytest

from memhub.errors import Conflict, InvalidInput, NotFound
from memhub.storage.admin import Actor
from memhub.storage.postgres.backend import PostgresBackend
from memhub.storage.postgres.operator.admin_sessions import (
    LOGIN_FREE_FAILURES,
    LOGIN_LOCKS,
    lock_seconds,
)
from memhub.storage.principal import TokenLimits
from tests.conftest import make_settings

ACTOR = Actor("admin", "192.0.2.7")


@asynccontextmanager
async def backend_on(dsn, tmp_path):
    backend = PostgresBackend(make_settings(dsn, tmp_path), dsn)
    await backend.open()
    try:
        await backend.seed_surface_tokens(None)
        yield backend
    finally:
        await backend.close()


@pytest.fixture
async def backend(db_dsn, tmp_path):
    async with backend_on(db_dsn, tmp_path) as b:
        yield b


def active_surface_tokens(db_conn, surface):
    return db_conn.execute(
        "SELECT id FROM api_tokens WHERE surface = %s AND kind = 'surface' AND revoked_at IS NULL",
        [surface],
    ).fetchall()


async def test_rotation_revokes_the_old_token_and_the_new_one_authenticates(backend, db_conn):
    first = await backend.rotate_surface(ACTOR, "cursor")
    second = await backend.rotate_surface(ACTOR, "cursor")
    assert await backend.authenticate(first["token"]) is None
    principal = await backend.authenticate(second["token"])
    assert principal is not None and principal.surface == "cursor"
    assert second["replaces"] == first["id"]
    assert active_surface_tokens(db_conn, "cursor") == [(second["id"],)]


async def test_a_tokens_limits_are_set_audited_read_with_it_and_kept_by_a_rotation(backend):
    web = next(t for t in await backend.list_tokens() if t["surface"] == "web")
    limits = TokenLimits(max_in_flight=8, rate_per_minute=0, rate_burst=None)
    shown = await backend.set_token_limits(ACTOR, web["id"], limits)
    assert shown["limits"] == {"max_in_flight": 8, "rate_per_minute": 0, "rate_burst": None}
    rotated = await backend.rotate_surface(ACTOR, "web")
    assert rotated["limits"] == shown["limits"]
    assert (await backend.authenticate(rotated["token"])).limits == limits
    assert (await backend.recent_audit(5))[1]["action"] == "token.limits"
    with pytest.raises(NotFound):  # the old one is revoked
        await backend.set_token_limits(ACTOR, web["id"], limits)
    with pytest.raises(InvalidInput):
        TokenLimits.of({"max_in_flight": 0})


async def test_rotating_one_surface_leaves_the_others_untouched(backend, db_conn):
    web = await backend.rotate_surface(ACTOR, "web")
    before = {s: active_surface_tokens(db_conn, s) for s in ("desktop-cli", "cursor")}
    await backend.rotate_surface(ACTOR, "cursor")
    assert await backend.authenticate(web["token"]) is not None
    assert active_surface_tokens(db_conn, "desktop-cli") == before["desktop-cli"]


async def test_concurrent_rotations_of_one_surface_leave_exactly_one_active_token(backend, db_conn):
    results = await asyncio.gather(
        *(backend.rotate_surface(ACTOR, "web") for _ in range(4)), return_exceptions=True
    )
    winners = [r for r in results if isinstance(r, dict)]
    assert winners and all(isinstance(r, dict | Conflict) for r in results)
    active = active_surface_tokens(db_conn, "web")
    assert len(active) == 1
    assert active[0][0] in {w["id"] for w in winners}


async def test_rotating_an_unknown_surface_is_invalid_input(backend):
    with pytest.raises(InvalidInput):
        await backend.rotate_surface(ACTOR, "teletype")


async def test_a_created_scoped_token_carries_its_namespaces_and_read_only(backend, db_conn):
    row = await backend.create_token(
        ACTOR, surface="cursor", namespaces=["acme", "beta", "acme"], read_only=True, label="ci"
    )
    principal = await backend.authenticate(row["token"])
    assert principal.namespaces == ("acme", "beta")
    assert principal.read_only and principal.surface == "cursor"
    stored = db_conn.execute(
        "SELECT kind, token_hash FROM api_tokens WHERE id = %s", [row["id"]]
    ).fetchone()
    assert stored[0] == "scoped"
    assert bytes(stored[1]) == hashlib.sha256(row["token"].encode()).digest()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"surface": "Bad Surface", "namespaces": None},
        {"surface": "cursor", "namespaces": ["UPPER"]},
        {"surface": "cursor", "namespaces": [f"ns{i}" for i in range(65)]},
        {"surface": "cursor", "namespaces": None, "label": "x" * 101},
        {"surface": "cursor", "namespaces": []},
        {"surface": "cursor", "namespaces": [""]},
        {"surface": "cursor", "namespaces": ["  "]},
        {"surface": "cursor", "namespaces": ["acme", ""]},
    ],
    ids=["bad-surface", "bad-namespace", "too-many-namespaces", "long-label",
         "empty-namespace-list", "blank-namespace", "whitespace-namespace",
         "a-blank-among-names"],
)
async def test_token_creation_refuses_bad_input(backend, db_conn, kwargs):
    """An empty or blank namespace list is refused, never read as "every namespace" (None
    is the one way to an unscoped token): reading it as every namespace would mint an unscoped
    token."""
    with pytest.raises(InvalidInput):
        await backend.create_token(ACTOR, read_only=False, **kwargs)
    assert db_conn.execute("SELECT count(*) FROM api_tokens WHERE kind = 'scoped'"
                           ).fetchone() == (0,)


async def test_only_an_explicit_none_creates_a_token_on_every_namespace(backend):
    row = await backend.create_token(ACTOR, surface="cursor", namespaces=None, read_only=False)
    assert row["namespaces"] is None
    assert (await backend.authenticate(row["token"])).namespaces is None


async def test_revoking_refuses_unknown_and_already_revoked_tokens(backend):
    row = await backend.create_token(ACTOR, surface="web", namespaces=["acme"], read_only=False)
    revoked = await backend.revoke_token(ACTOR, row["id"])
    assert revoked["active"] is False
    assert await backend.authenticate(row["token"]) is None
    with pytest.raises(Conflict):
        await backend.revoke_token(ACTOR, row["id"])
    with pytest.raises(NotFound):
        await backend.revoke_token(ACTOR, 999_999)


async def test_every_token_change_is_audited_without_the_token(backend, db_conn):
    created = await backend.create_token(ACTOR, surface="web", namespaces=None, read_only=False)
    rotated = await backend.rotate_surface(ACTOR, "desktop-cli")
    await backend.revoke_token(ACTOR, created["id"])
    rows = db_conn.execute(
        "SELECT action, actor, source, token_id, token_prefix, at <= now() FROM admin_audit"
        " ORDER BY id"
    ).fetchall()
    assert [r[0] for r in rows] == ["token.create", "token.rotate", "token.revoke"]
    assert {(r[1], r[2]) for r in rows} == {("admin", "192.0.2.7")}
    assert rows[1][3] == rotated["id"] and rows[1][4] == rotated["prefix"]
    everything = json.dumps(db_conn.execute("SELECT json_agg(a) FROM admin_audit a").fetchone()[0])
    for token in (created["token"], rotated["token"]):
        assert token not in everything and token[len(created["prefix"]):] not in everything


def lapse_lock(db_conn, source):
    db_conn.execute("UPDATE admin_login_failures SET locked_until = now() - interval '1 s'"
                    " WHERE source = %s", [source])


async def test_failed_logins_lock_a_client_out_exponentially_and_a_success_clears(backend,
                                                                                  db_conn):
    source = "198.51.100.9"
    locks = []
    for _ in range(LOGIN_FREE_FAILURES + 2):
        attempt = await backend.reserve_login_attempt(source)
        assert attempt.retry_after == 0
        locks.append(attempt.lock_seconds)
        if attempt.lock_seconds:
            assert (await backend.reserve_login_attempt(source)).retry_after > 0  # locked
            lapse_lock(db_conn, source)
    assert locks[: LOGIN_FREE_FAILURES - 1] == [0] * (LOGIN_FREE_FAILURES - 1)
    assert locks[LOGIN_FREE_FAILURES - 1 :] == [lock_seconds(n) for n in range(3, 6)]
    assert locks[-1] > locks[-2] > locks[-3] > 0
    assert (await backend.reserve_login_attempt("198.51.100.10")).retry_after == 0
    await backend.clear_login_failures(source)
    assert (await backend.reserve_login_attempt(source)).retry_after == 0


def test_the_lock_is_capped():
    assert lock_seconds(1000) == lock_seconds(500) <= 15 * 60
    assert LOGIN_LOCKS[-1] == lock_seconds(1000)  # the SQL repeats the table's last entry


async def test_the_lock_table_stays_capped_far_beyond_its_length(backend, db_conn):
    source = "198.51.100.11"
    db_conn.execute("INSERT INTO admin_login_failures (source, failures) VALUES (%s, 500)",
                    [source])
    assert (await backend.reserve_login_attempt(source)).lock_seconds == lock_seconds(501)


async def test_simultaneous_attempts_from_one_address_get_at_most_the_free_ones(backend):
    """Checking the lock, then counting the failure after the password check, let 5-11 of
    12 simultaneous guesses be evaluated; reserving atomically first lets exactly 3 through."""
    attempts = await asyncio.gather(
        *(backend.reserve_login_attempt("203.0.113.77") for _ in range(12)))
    allowed = [a for a in attempts if a.retry_after == 0]
    assert len(allowed) == LOGIN_FREE_FAILURES
    assert sorted(a.lock_seconds for a in allowed)[-1] == lock_seconds(LOGIN_FREE_FAILURES)


async def test_login_backoff_is_shared_by_every_process(db_dsn, tmp_path):
    async with backend_on(db_dsn, tmp_path) as one, backend_on(db_dsn, tmp_path) as two:
        for _ in range(LOGIN_FREE_FAILURES):
            await one.reserve_login_attempt("203.0.113.5")
        assert (await two.reserve_login_attempt("203.0.113.5")).retry_after > 0


async def test_a_flash_is_read_once_and_only_by_its_session(backend):
    mine, other, flash = (hashlib.sha256(x).digest() for x in (b"mine", b"other", b"flash"))
    await backend.put_admin_flash(flash, mine, b"\x01\x02", {"row": {"id": 7}}, 60)
    assert await backend.take_admin_flash(flash, other) is None
    assert await backend.take_admin_flash(flash, mine) == (b"\x01\x02", {"row": {"id": 7}})
    assert await backend.take_admin_flash(flash, mine) is None


async def test_an_expired_flash_shows_nothing_and_is_dropped_by_the_next(backend, db_conn):
    mine, old, new = (hashlib.sha256(x).digest() for x in (b"mine", b"old", b"new"))
    await backend.put_admin_flash(old, mine, b"\x01", {}, 60)
    db_conn.execute("UPDATE admin_flash SET expires_at = now() - interval '1 s'")
    assert await backend.take_admin_flash(old, mine) is None
    await backend.put_admin_flash(new, mine, b"\x02", {}, 60)
    assert db_conn.execute("SELECT count(*) FROM admin_flash").fetchone() == (1,)


async def test_the_cookie_secret_is_generated_once_and_shared(db_dsn, tmp_path):
    async with backend_on(db_dsn, tmp_path) as one, backend_on(db_dsn, tmp_path) as two:
        secrets = await asyncio.gather(
            one.admin_secret("admin.session"), two.admin_secret("admin.session")
        )
        again = await one.admin_secret("admin.session")
    assert secrets[0] == secrets[1] == again and len(again) == 32


def _as_app(db_dsn, statement, params=()):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SET ROLE memhub_app")
        conn.execute(statement, params)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE admin_audit SET actor = 'someone else'",
        "DELETE FROM admin_audit",
        "UPDATE admin_secrets SET value = '\\x00'",
        "DELETE FROM admin_secrets",
        "DELETE FROM api_tokens",
        "UPDATE admin_flash SET pad = '\\x00'",
    ],
)
async def test_the_app_role_cannot_rewrite_the_audit_secrets_or_delete_tokens(
    backend, db_dsn, statement
):
    await backend.audit(ACTOR, "login.success")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _as_app(db_dsn, statement)


async def test_the_overview_counts_memories_writes_per_surface_and_the_queue(backend, db_conn):
    db_conn.execute("SET session_replication_role = replica")
    for ns, status, author in [("acme", "ACTIVE", "web"), ("acme", "ACTIVE", "cursor"),
                               ("acme", "SUPERSEDED", "web"), ("beta", "ACTIVE", "cursor")]:
        mid = uuid.uuid4()
        retired = status == "SUPERSEDED"
        db_conn.execute(
            "INSERT INTO memories (id, namespace, kind, content, content_hash, author_client,"
            " status, superseded_by, retired_at)"
            # replica role skips the trigger that records retired_at; its CHECK still holds
            " VALUES (%s, %s, 'FACT', %s, %s, %s, %s, %s,"
            "         CASE WHEN %s::boolean THEN now() END)",
            [mid, ns, f"c {mid}", mid.bytes * 2, author, status,
             uuid.uuid4() if retired else None, retired],
        )
        db_conn.execute(
            "INSERT INTO memory_revisions (memory_id, namespace, revision, content, author_client)"
            " VALUES (%s, %s, 1, 'c', %s)",
            [mid, ns, author],
        )
        db_conn.execute(
            "INSERT INTO embedding_jobs (namespace, memory_id, revision, status)"
            " VALUES (%s, %s, 1, %s)",
            [ns, mid, "dead" if ns == "beta" else "pending"],
        )
    overview = await backend.overview(days=30)
    assert overview["namespaces"] == {"acme": {"ACTIVE": 2, "SUPERSEDED": 1},
                                      "beta": {"ACTIVE": 1}}
    assert len(overview["days"]) == 30
    assert {s: sum(v) for s, v in overview["writes"].items()} == {"web": 2, "cursor": 2}
    assert overview["writes"]["web"][-1] == 2  # written today (database clock)
    assert overview["embedding_queue"] == {"pending": 3, "dead": 1}
