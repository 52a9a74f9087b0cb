"""The OAuth provider's answers that need no database."""

from __future__ import annotations

import pytest
from mcp.server.auth.provider import IdentityAssertionParams, TokenError
from mcp.shared.auth import OAuthClientInformationFull

from memhub.config import Settings
from memhub.oauth.clients import registration_source
from memhub.oauth.provider import MemhubOAuthProvider
from memhub.oauth.urls import oauth_urls
from memhub.runtime import Runtime


async def test_an_identity_assertion_is_refused_as_an_unsupported_grant():
    settings = Settings(admin_password="a long passphrase")
    urls = oauth_urls(settings)
    assert urls is not None
    provider = MemhubOAuthProvider(Runtime(settings=settings, version="test"), urls)
    client = OAuthClientInformationFull(client_id="c", client_secret="s",
                                        redirect_uris=["https://client.example/cb"])
    with pytest.raises(TokenError) as refused:
        await provider.exchange_identity_assertion(
            client, IdentityAssertionParams(assertion="eyJ.a.b"))
    assert refused.value.error == "unsupported_grant_type"


@pytest.mark.parametrize("address, source", [
    ("192.0.2.7", "192.0.2.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("::ffff:192.0.2.7", "192.0.2.7"),
    (None, "unknown"),
])
def test_registrations_are_counted_by_ipv4_address_and_by_ipv6_64(address, source):
    """One IPv6 subscriber holds a /64: counted by address, each of its 2^64 would be new."""
    assert registration_source(address) == source
