"""The OAuth store on a real PostgreSQL: a code and a refresh token are spent once even when two
requests race (racing or retried refreshes within the grace period all get the one pair that
spending issued), registrations from one address are counted one at a time, a consent is
scoped like a project-scoped token, an issued access token is an ordinary api_tokens row the
token gate authenticates, and memhub-admin lists and revokes connections."""

from __future__ import annotations

import asyncio
import hashlib

import psycopg
import pytest

from memhub.errors import InvalidInput, RateLimited
from memhub.storage.admin import Actor
from memhub.storage.oauth import REVOKED_BY_OPERATOR, Consent, RegistrationLimits
from memhub.storage.postgres.backend import PostgresBackend
from tests.conftest import make_settings
from tests.integration.test_admin_cli import cli, ok_json

ACTOR = Actor("admin", "192.0.2.7")
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # RFC 7636 appendix B
GRACE = 30


def limits(source="192.0.2.7", per_hour=10, pending=100, max_clients=10) -> RegistrationLimits:
    return RegistrationLimits(source=source, per_hour=per_hour, pending_per_source=pending,
                              max_clients=max_clients)


@pytest.fixture
async def backend(db_dsn, tmp_path):
    backend = PostgresBackend(make_settings(db_dsn, tmp_path), db_dsn)
    await backend.open()
    try:
        await backend.register_oauth_client("client-1", None, "Claude", {"client_name": "Claude"},
                                            limits())
        yield backend
    finally:
        await backend.close()


def consent(**overrides) -> Consent:
    values = dict(client_id="client-1", surface="web", namespaces=["alpha"], read_only=True,
                  tool_profile="core", resource="http://127.0.0.1:8000/mcp", scopes=[],
                  redirect_uri="https://claude.ai/api/mcp/auth_callback", redirect_given=True,
                  code_challenge=CHALLENGE)
    return Consent(**{**values, **overrides})


async def test_an_issued_access_token_authenticates_with_the_consented_scope(backend):
    _, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    issued = await backend.redeem_oauth_code(ACTOR, code, 3600, 86400)
    principal = await backend.authenticate(issued.access_token)
    assert principal.namespaces == ("alpha",)
    assert principal.read_only is True and principal.tool_profile == "core"
    assert principal.surface == "web"


async def test_two_racing_exchanges_of_one_code_issue_tokens_once(backend):
    _, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    results = await asyncio.gather(*(backend.redeem_oauth_code(ACTOR, code, 3600, 86400)
                                     for _ in range(4)))
    assert sum(r is not None for r in results) == 1


async def connected(backend):
    _, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    return await backend.redeem_oauth_code(ACTOR, code, 3600, 86400)


async def test_racing_refreshes_of_one_refresh_token_rotate_once_and_all_get_its_pair(backend):
    issued = await connected(backend)
    results = await asyncio.gather(*(
        backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400, GRACE)
        for _ in range(4)))
    assert sum(not r.replayed for r in results) == 1
    assert len({(r.access_token, r.refresh_token, r.token_id) for r in results}) == 1
    assert await backend.authenticate(results[0].access_token) is not None


async def test_without_a_grace_period_racing_refreshes_rotate_once_and_only_one_gets_tokens(
    backend
):
    issued = await connected(backend)
    results = await asyncio.gather(*(
        backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400, 0)
        for _ in range(4)))
    assert sum(r is not None for r in results) == 1


async def test_a_retry_after_the_grace_period_gets_nothing(backend, db_dsn):
    issued = await connected(backend)
    assert await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400, GRACE)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE oauth_refresh_tokens SET used_at = used_at - make_interval("
                     "secs => %s) WHERE used_at IS NOT NULL", [GRACE + 1])
    assert await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400,
                                              GRACE) is None


async def test_a_retry_after_its_pair_was_refreshed_in_turn_gets_nothing(backend):
    issued = await connected(backend)
    second = await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400, GRACE)
    assert await backend.rotate_oauth_refresh(ACTOR, second.refresh_token, 3600, 86400, GRACE)
    assert await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400,
                                              GRACE) is None


async def test_registrations_from_one_address_racing_never_pass_its_hourly_limit(backend):
    results = await asyncio.gather(*(
        backend.register_oauth_client(f"racer-{i}", None, None, {}, limits(
            source="198.51.100.9", per_hour=3, max_clients=100))
        for i in range(8)), return_exceptions=True)
    assert sum(r is None for r in results) == 3
    refused = [r for r in results if r is not None]
    assert all(isinstance(r, RateLimited) and 0 < r.details["retry_after_seconds"] <= 3601
               for r in refused)
    # Another address is not held back by this one's burst.
    await backend.register_oauth_client("elsewhere", None, None, {}, limits(
        source="198.51.100.10", per_hour=3, max_clients=100))


async def test_an_expired_code_issues_nothing(backend, db_dsn):
    _, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE oauth_codes SET expires_at = now() - interval '1 second'")
    assert await backend.redeem_oauth_code(ACTOR, code, 3600, 86400) is None


@pytest.mark.parametrize("names", [[], [""], ["Not A Namespace"]])
async def test_a_consent_is_scoped_like_a_project_scoped_token(backend, names):
    with pytest.raises(InvalidInput):
        await backend.create_oauth_grant(ACTOR, consent(namespaces=names), 60)


async def test_codes_and_refresh_tokens_are_stored_only_as_digests(backend, db_dsn):
    _, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    issued = await backend.redeem_oauth_code(ACTOR, code, 3600, 86400)
    refreshed = await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400,
                                                   GRACE)
    replayed = await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400,
                                                  GRACE)
    assert replayed.replayed and replayed.access_token == refreshed.access_token
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        dump = conn.execute(
            "SELECT (SELECT json_agg(c)::text FROM oauth_codes c) || "
            "(SELECT json_agg(r)::text FROM oauth_refresh_tokens r) || "
            "(SELECT json_agg(t)::text FROM api_tokens t)").fetchone()[0]
        stored = conn.execute("SELECT count(*) FROM oauth_refresh_tokens WHERE token_hash = %s",
                              [hashlib.sha256(issued.refresh_token.encode()).digest()])
        assert stored.fetchone()[0] == 1
    for secret in (code, issued.access_token, issued.refresh_token, refreshed.access_token,
                   refreshed.refresh_token):
        assert secret not in dump


async def test_memhub_admin_lists_oauth_connections_and_revokes_one(backend, db_dsn):
    grant_id, code = await backend.create_oauth_grant(ACTOR, consent(), 60)
    issued = await backend.redeem_oauth_code(ACTOR, code, 3600, 86400)
    listed = ok_json(cli(db_dsn, "oauth", "clients", "--json"))
    assert [(g["id"], g["client_name"], g["namespaces"]) for g in listed] == \
        [(grant_id, "Claude", ["alpha"])]
    # OAuth access tokens are listed by their connection, not among the scoped tokens.
    tokens = ok_json(cli(db_dsn, "token", "list", "--all", "--json"))
    assert all(t["kind"] != "oauth" for t in tokens)

    revoked = ok_json(cli(db_dsn, "oauth", "revoke", str(grant_id), "--yes", "--json"))
    assert revoked == {"id": grant_id, "revoked": True}
    assert await backend.authenticate(issued.access_token) is None
    assert await backend.rotate_oauth_refresh(ACTOR, issued.refresh_token, 3600, 86400,
                                              GRACE) is None
    assert ok_json(cli(db_dsn, "oauth", "clients", "--json")) == []
    again = cli(db_dsn, "oauth", "revoke", str(grant_id), "--yes", "--json")
    assert again.returncode != 0
    actions = [a["action"] for a in await backend.recent_audit(50)]
    assert "oauth.revoke" in actions


async def test_an_operator_revocation_is_audited_with_its_reason(backend):
    grant_id, _ = await backend.create_oauth_grant(ACTOR, consent(), 60)
    assert await backend.revoke_oauth_grant(ACTOR, grant_id, REVOKED_BY_OPERATOR)
    assert not await backend.revoke_oauth_grant(ACTOR, grant_id, REVOKED_BY_OPERATOR)
    latest = (await backend.recent_audit(1))[0]
    assert latest["action"] == "oauth.revoke"
    assert latest["detail"]["reason"] == "operator"
