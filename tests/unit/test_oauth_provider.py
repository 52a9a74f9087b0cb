"""The OAuth provider's answers that need no database."""

from __future__ import annotations

import pytest
from mcp.server.auth.provider import IdentityAssertionParams, TokenError
from mcp.shared.auth import OAuthClientInformationFull

from memhub.config import Settings
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
