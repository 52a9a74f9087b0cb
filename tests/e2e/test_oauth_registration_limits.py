"""Dynamic client registration is open to anyone, so one client address may register only so
many clients an hour and hold only so many that no operator has approved; past either limit
it is answered 429 RATE_LIMITED with Retry-After, over real HTTP. The address is the peer's,
or X-Forwarded-For from a MEMHUB_TRUSTED_PROXIES peer only."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from mcp.client.auth.oauth2 import PKCEParameters

from tests.conftest import make_settings
from tests.support.oauth import OAuthFlow
from tests.support.server import free_port, thread_server


@contextmanager
def oauth_flow(db_dsn, tmp_path, **settings):
    port = free_port()
    with thread_server(make_settings(db_dsn, tmp_path, port=port, **settings),
                       port=port) as running:
        flow = OAuthFlow(running.base_url)
        try:
            yield flow
        finally:
            flow.close()


def assert_rate_limited(response, most_seconds: int) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "RATE_LIMITED" and error["remedy"]
    wait = int(response.headers["retry-after"])
    assert 0 < wait <= most_seconds and error["details"]["retry_after_seconds"] == wait


def test_an_address_past_its_hourly_registrations_is_answered_429_with_retry_after(
    db_dsn, tmp_path
):
    with oauth_flow(db_dsn, tmp_path, oauth_registrations_per_hour=3) as flow:
        assert [flow.register().status_code for _ in range(3)] == [201, 201, 201]
        assert_rate_limited(flow.register(), 3601)


def test_an_address_holding_its_cap_of_unapproved_clients_is_refused_until_one_is_approved(
    db_dsn, tmp_path
):
    with oauth_flow(db_dsn, tmp_path, oauth_pending_clients_per_address=2) as flow:
        first = flow.client()
        assert flow.register().status_code == 201
        assert_rate_limited(flow.register(), 86401)
        # An approved client is a connection, no longer pending: room for one more.
        pkce = PKCEParameters.generate()
        assert flow.exchange(first, flow.code(first, pkce), pkce.code_verifier).status_code == 200
        assert flow.register().status_code == 201


@pytest.mark.parametrize("trusted, expected", [
    ([], [201, 201, 429, 429]),  # every request is the peer's: 127.0.0.1
    (["127.0.0.1"], [201, 201, 429, 201]),  # the proxy names each client
])
def test_x_forwarded_for_names_the_address_only_from_a_trusted_proxy(
    db_dsn, tmp_path, trusted, expected
):
    sent_from = ["198.51.100.1", "198.51.100.1", "198.51.100.1", "198.51.100.2"]
    with oauth_flow(db_dsn, tmp_path, oauth_registrations_per_hour=2,
                    trusted_proxies=trusted) as flow:
        got = [flow.http.post("/register", headers={"X-Forwarded-For": address}, json={
            "client_name": "behind a proxy", "redirect_uris": ["https://client.example/cb"]
        }).status_code for address in sent_from]
    assert got == expected
