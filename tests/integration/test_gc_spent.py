"""Garbage collection of rows kept past their use (migration 0034): spent OAuth codes and
refresh tokens, handled GitHub deliveries and spent intent-gate nonces go once they can no
longer matter, younger ones stay, a dry run only counts, and the run's record holds them."""

from __future__ import annotations

import os

import psycopg
import pytest

from memhub.storage.postgres.operator.gc import (
    GATE_NONCE_KEEP_SECONDS,
    GITHUB_DELIVERY_KEEP_SECONDS,
)
from memhub.storage.retention import RetentionPolicy
from tests.support.memories import open_backend

DAY = 86400
POLICY = RetentionPolicy(idempotency_ttl_seconds=7 * DAY, dead_job_ttl_seconds=30 * DAY,
                         artifact_grace_seconds=DAY)
HOUR = 3600


@pytest.fixture
def owner(db_conn):
    """The owner's connection, seeing every namespace (forced row-level security)."""
    db_conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
    return db_conn


def add_grant(conn: psycopg.Connection) -> int:
    client = f"c-{os.urandom(4).hex()}"
    conn.execute("INSERT INTO oauth_clients (client_id, info) VALUES (%s, '{}')", [client])
    return conn.execute(
        "INSERT INTO oauth_grants (client_id, surface, read_only, tool_profile, resource)"
        " VALUES (%s, 'web', false, 'full', 'http://127.0.0.1/mcp') RETURNING id",
        [client]).fetchone()[0]


def add_spent_rows(conn: psycopg.Connection) -> dict[str, list[bytes | str]]:
    """Per kind: [the row old enough to go, the rows just too young]."""
    grant = add_grant(conn)
    rows: dict[str, list[bytes | str]] = {k: [] for k in
                                          ("codes", "refresh", "deliveries", "nonces")}
    # Expired 1 h 1 min ago (goes), 59 min ago and not yet (stay); used or not.
    for expired_ago, used in ((HOUR + 60, True), (HOUR - 60, True), (-600, False)):
        code = os.urandom(32)
        conn.execute(
            "INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, redirect_given,"
            " code_challenge, expires_at, used_at) VALUES (%s, %s, 'http://127.0.0.1/cb',"
            " true, %s, now() - make_interval(secs => %s), CASE WHEN %s THEN now() END)",
            [code, grant, "x" * 43, expired_ago, used])
        rows["codes"].append(code)
    for expired_ago in (DAY + 60, DAY - 60, -DAY):
        token = os.urandom(32)
        conn.execute(
            "INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at, used_at)"
            " VALUES (%s, %s, now() - make_interval(secs => %s), now() - interval '2 days')",
            [token, grant, expired_ago])
        rows["refresh"].append(token)
    for age in (GITHUB_DELIVERY_KEEP_SECONDS + 60, GITHUB_DELIVERY_KEEP_SECONDS - 60):
        delivery = f"d-{os.urandom(6).hex()}"
        conn.execute("INSERT INTO github_deliveries (delivery_id, event, received_at)"
                     " VALUES (%s, 'push', now() - make_interval(secs => %s))", [delivery, age])
        rows["deliveries"].append(delivery)
    for age in (GATE_NONCE_KEEP_SECONDS + 60, GATE_NONCE_KEEP_SECONDS - 60):
        nonce = os.urandom(12).hex()
        conn.execute("INSERT INTO gate_nonces (namespace, nonce, used_at)"
                     " VALUES ('acme', %s, now() - make_interval(secs => %s))", [nonce, age])
        rows["nonces"].append(nonce)
    return rows


def left(conn: psycopg.Connection) -> dict[str, set]:
    return {
        "codes": {bytes(r[0]) for r in conn.execute("SELECT code_hash FROM oauth_codes")},
        "refresh": {bytes(r[0]) for r in
                    conn.execute("SELECT token_hash FROM oauth_refresh_tokens")},
        "deliveries": {r[0] for r in conn.execute("SELECT delivery_id FROM github_deliveries")},
        "nonces": {r[0] for r in conn.execute("SELECT nonce FROM gate_nonces")},
    }


def test_every_confirmation_expires_before_its_nonce_is_collected():
    from memhub.config import Settings

    ttl_max = Settings.model_fields["gate_confirm_ttl_seconds"].metadata
    longest = min(m.le for m in ttl_max if getattr(m, "le", None) is not None)
    assert GATE_NONCE_KEEP_SECONDS > longest


async def test_gc_removes_spent_rows_once_they_cannot_matter_and_records_them(
    db_dsn, owner, tmp_path
):
    rows = add_spent_rows(owner)
    async with open_backend(db_dsn, tmp_path) as backend:
        dry = await backend.collect_garbage(POLICY, dry_run=True)
        assert left(owner) == {k: set(v) for k, v in rows.items()}  # a dry run only counts
        report = await backend.collect_garbage(POLICY)
    expected = {"oauth_codes": 1, "oauth_refresh_tokens": 1, "github_deliveries": 1,
                "gate_nonces": 1}
    for kind, n in expected.items():
        assert dry["removed"][kind] == n and report["removed"][kind] == n, (kind, report)
    assert left(owner) == {k: set(v[1:]) for k, v in rows.items()}
    recorded = owner.execute("SELECT removed FROM gc_runs ORDER BY id DESC LIMIT 1").fetchone()
    assert {k: recorded[0][k] for k in expected} == expected


async def test_a_run_removes_at_most_a_batch_of_spent_rows_and_says_more_remains(
    db_dsn, owner, tmp_path
):
    for _ in range(3):
        owner.execute("INSERT INTO github_deliveries (delivery_id, event, received_at)"
                      " VALUES (%s, 'push', now() - interval '60 days')",
                      [f"d-{os.urandom(6).hex()}"])
    small = RetentionPolicy(idempotency_ttl_seconds=7 * DAY, dead_job_ttl_seconds=30 * DAY,
                            artifact_grace_seconds=DAY, batch=2)
    async with open_backend(db_dsn, tmp_path) as backend:
        first = await backend.collect_garbage(small)
        second = await backend.collect_garbage(small)
    assert (first["removed"]["github_deliveries"], first["more"]) == (2, True)
    assert (second["removed"]["github_deliveries"], second["more"]) == (1, False)
