"""memhub's `OAuthAuthorizationServerProvider` (mcp.server.auth): the storage behind the SDK's
registration, authorization, token and revocation endpoints.

The SDK's handlers parse and validate each request, check the redirect URI against the
registered ones, refuse any PKCE method but S256, and verify the code verifier; this provider
adds what is memhub's policy: `state` is required, the resource indicator must name this
server's /mcp, the operator consents on /admin before any code exists, codes and refresh tokens
are spent once (a second use revokes the grant, except a refresh retried within
MEMHUB_OAUTH_REFRESH_GRACE_SECONDS, which gets the same pair), registration is limited per
client address, and access tokens are api_tokens rows.
"""

from __future__ import annotations

import json
import logging
import re
import time
from contextvars import ContextVar
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from ..runtime import Runtime
from ..storage.admin import Actor
from ..storage.oauth import (
    CODE_REUSE,
    REFRESH_REUSE,
    REVOKED_BY_CLIENT,
    IssuedTokens,
    RegistrationLimits,
)
from ..web.sessions import SECRET_NAME, configured_key
from .clients import MAX_CLIENTS, check_registration, registration_source
from .urls import OAuthUrls, same_resource

logger = logging.getLogger(__name__)

REQUEST_SALT = "memhub.oauth.request"
REQUEST_TTL_SECONDS = 600  # an authorization request waits this long for the operator
CODE_TTL_SECONDS = 60
MAX_STATE_CHARS = 1000
MAX_INFO_CHARS = 16_000
# RFC 7636 §4.2: an S256 challenge is base64url without padding (43 chars for SHA-256).
CHALLENGE_SHAPE = re.compile(r"[A-Za-z0-9_-]{43,128}")

# The client address of the request being handled (set by oauth.routes.Endpoint), for the
# audit: the SDK calls the provider without the request.
CLIENT_SOURCE: ContextVar[str | None] = ContextVar("memhub_oauth_source", default=None)


class GrantAccessToken(AccessToken):
    grant_id: int


class GrantRefreshToken(RefreshToken):
    grant_id: int


def client_actor(client: OAuthClientInformationFull) -> Actor:
    return Actor(f"oauth:{client.client_name or client.client_id}"[:200], CLIENT_SOURCE.get())


def _token_response(issued: IssuedTokens) -> OAuthToken:
    return OAuthToken(access_token=issued.access_token, token_type="Bearer",
                      expires_in=issued.expires_in, refresh_token=issued.refresh_token,
                      scope=" ".join(issued.scopes) or None)


class MemhubOAuthProvider:
    def __init__(self, rt: Runtime, urls: OAuthUrls) -> None:
        self.rt = rt
        self.urls = urls
        self._signer: URLSafeTimedSerializer | None = None

    async def _requests(self) -> URLSafeTimedSerializer:
        """Pending requests are signed with the /admin cookie key under their own salt: a
        value signed for one purpose is never valid as another."""
        if self._signer is None:
            secret = (configured_key(self.rt.settings.session_secret)
                      or await self.rt.storage().admin_secret(SECRET_NAME))
            self._signer = URLSafeTimedSerializer(secret, salt=REQUEST_SALT)
        return self._signer

    # --- clients ----------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        row = await self.rt.storage().oauth_client(client_id)
        if row is None:
            return None
        return OAuthClientInformationFull.model_validate(
            {**row["info"], "client_id": row["client_id"], "client_secret": row["client_secret"]})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        check_registration(client_info)
        info = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        if len(json.dumps(info)) > MAX_INFO_CHARS:
            raise RegistrationError("invalid_client_metadata", "the client metadata is too large")
        settings = self.rt.settings
        limits = RegistrationLimits(
            source=registration_source(CLIENT_SOURCE.get()),
            per_hour=settings.oauth_registrations_per_hour,
            pending_per_source=settings.oauth_pending_clients_per_address,
            max_clients=MAX_CLIENTS)
        # RateLimited goes up to oauth.routes.Endpoint, which answers 429 with Retry-After.
        await self.rt.storage().register_oauth_client(
            client_info.client_id, client_info.client_secret, client_info.client_name, info,
            limits)
        await self.rt.storage().audit(client_actor(client_info), "oauth.register",
                                      detail={"client_id": client_info.client_id})

    # --- authorization: the operator decides on /admin/oauth/consent ------------------------
    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        if not params.state:
            raise AuthorizeError("invalid_request", "state is required")
        if len(params.state) > MAX_STATE_CHARS:
            raise AuthorizeError("invalid_request", "state is too long")
        if not CHALLENGE_SHAPE.fullmatch(params.code_challenge):
            raise AuthorizeError("invalid_request", "code_challenge must be an S256 challenge")
        if params.resource is not None and not same_resource(params.resource, self.urls.resource):
            raise AuthorizeError("invalid_target", "resource must be this server's /mcp")
        pending = {
            "client_id": client.client_id,
            "redirect_uri": str(params.redirect_uri),
            "redirect_given": params.redirect_uri_provided_explicitly,
            "code_challenge": params.code_challenge,
            "state": params.state,
            "scopes": params.scopes or [],
            "resource": str(self.urls.resource),
        }
        signer = await self._requests()
        return self.urls.consent("request=" + signer.dumps(pending))

    async def pending(self, signed: str | None) -> dict[str, Any] | None:
        """The authorization request the consent page carries, or None (absent, tampered or
        older than REQUEST_TTL_SECONDS)."""
        if not signed or len(signed) > 8192:
            return None
        try:
            value = (await self._requests()).loads(signed, max_age=REQUEST_TTL_SECONDS)
        except BadData:
            return None
        return value if isinstance(value, dict) else None

    # --- codes ------------------------------------------------------------------------------
    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        row = await self.rt.storage().oauth_code(authorization_code)
        if row is None or row["client_id"] != client.client_id or row["revoked"]:
            return None
        if row["used"]:
            # OAuth 2.1 §4.1.3: a code presented twice was stolen or replayed; the tokens
            # issued from it are revoked with its grant.
            await self._revoke(client, row["grant_id"], CODE_REUSE)
            return None
        return AuthorizationCode(
            code=authorization_code, scopes=list(row["scopes"]), expires_at=row["expires_at"],
            client_id=row["client_id"], code_challenge=row["code_challenge"],
            redirect_uri=AnyUrl(row["redirect_uri"]),
            redirect_uri_provided_explicitly=row["redirect_given"], resource=row["resource"])

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        settings = self.rt.settings
        issued = await self.rt.storage().redeem_oauth_code(
            client_actor(client), authorization_code.code, settings.oauth_access_token_ttl,
            settings.oauth_refresh_token_ttl)
        if issued is None:
            # Lost the race to a concurrent exchange of the same code: that is a reuse too.
            row = await self.rt.storage().oauth_code(authorization_code.code)
            if row is not None and row["used"]:
                await self._revoke(client, row["grant_id"], CODE_REUSE)
            raise TokenError("invalid_grant", "authorization code is spent or expired")
        return _token_response(issued)

    # --- refresh tokens ---------------------------------------------------------------------
    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> GrantRefreshToken | None:
        row = await self.rt.storage().oauth_refresh_token(refresh_token)
        if row is None or row["client_id"] != client.client_id or row["revoked"]:
            return None
        if row["used"] and row["used_ago"] > self.rt.settings.oauth_refresh_grace_seconds:
            # Rotation makes a refresh token single-use; a second use means two parties hold
            # it, so the whole family goes (OAuth 2.1 §4.3.1). Within the grace period it is
            # taken for a retry: the exchange answers the pair already issued, if it can.
            await self._revoke(client, row["grant_id"], REFRESH_REUSE)
            return None
        return GrantRefreshToken(token=refresh_token, client_id=row["client_id"],
                                 scopes=list(row["scopes"]), expires_at=int(row["expires_at"]),
                                 resource=row["resource"], grant_id=row["grant_id"])

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: GrantRefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        settings = self.rt.settings
        issued = await self.rt.storage().rotate_oauth_refresh(
            client_actor(client), refresh_token.token, settings.oauth_access_token_ttl,
            settings.oauth_refresh_token_ttl, settings.oauth_refresh_grace_seconds)
        if issued is None:
            # Spent and not a retry the grace period answers (too late, or its pair already
            # refreshed in turn): a reuse.
            row = await self.rt.storage().oauth_refresh_token(refresh_token.token)
            if row is not None and row["used"]:
                await self._revoke(client, row["grant_id"], REFRESH_REUSE)
            raise TokenError("invalid_grant", "refresh token is spent, expired or revoked")
        return _token_response(issued)

    # --- identity assertions (SEP-990): not a grant memhub offers --------------------------
    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        """Refused: access is granted by the operator on the consent page, never by an
        identity provider's assertion (RFC 7523 jwt-bearer with an ID-JAG). The SDK's token
        endpoint refuses that grant itself unless identity assertions are enabled, which
        oauth/routes.py does not do; this answers the same should they ever be."""
        raise TokenError("unsupported_grant_type",
                         "the JWT bearer grant is not supported by this authorization server")

    # --- access tokens (the token gate authenticates them itself, as api_tokens rows) -------
    async def load_access_token(self, token: str) -> GrantAccessToken | None:
        row = await self.rt.storage().oauth_access_token(token)
        if row is None or row["revoked"] or row["expires_at"] < time.time():
            return None
        return GrantAccessToken(token=token, client_id=row["client_id"],
                                scopes=list(row["scopes"]), expires_at=int(row["expires_at"]),
                                resource=row["resource"], grant_id=row["grant_id"])

    async def revoke_token(self, token: GrantAccessToken | GrantRefreshToken) -> None:
        client = await self.get_client(token.client_id)
        if client is not None:
            await self._revoke(client, token.grant_id, REVOKED_BY_CLIENT)

    async def _revoke(self, client: OAuthClientInformationFull, grant_id: int, why: str) -> None:
        if await self.rt.storage().revoke_oauth_grant(client_actor(client), grant_id, why):
            logger.warning("oauth grant revoked", extra={"grant_id": grant_id, "reason": why})
