"""The OAuth 2.1 authorization server's storage area (oauth/ is the HTTP side): registered
clients, operator consents (grants), single-use authorization codes, rotated refresh tokens,
and access tokens that are api_tokens rows of kind 'oauth'.

A grant is one token family. Revoking it (the operator, the client's /revoke, or the reuse of
a spent code or refresh token) stops every access token it issued at once and refuses its
refresh tokens. A spent refresh token presented again within a short grace period answers the
pair its first use issued instead (a retry, or two refreshes at once); after it, a reuse
revokes. Every grant, refresh, replay, reuse and revocation is audited.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from .admin import Actor

# Why a grant was revoked (oauth_grants.revoked_why).
REVOKED_BY_OPERATOR = "operator"
REVOKED_BY_CLIENT = "client"
CODE_REUSE = "code_reuse"
REFRESH_REUSE = "refresh_reuse"


@dataclass(frozen=True)
class Consent:
    """What the operator approved on the consent page, and the authorization request it
    answers (already validated by the authorization endpoint)."""

    client_id: str
    surface: str
    namespaces: list[str] | None  # None: every namespace (an explicit choice)
    read_only: bool
    tool_profile: str
    resource: str
    scopes: list[str]
    redirect_uri: str
    redirect_given: bool
    code_challenge: str


@dataclass(frozen=True)
class IssuedTokens:
    """A fresh access token (an api_tokens row) and its refresh token, plaintext; the
    database keeps their digests. `replayed`: the pair a refresh already issued, answered
    again to a retry within the grace period."""

    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]
    token_id: int
    grant_id: int
    replayed: bool = False


@dataclass(frozen=True)
class RegistrationLimits:
    """How many clients may be registered: from `source` (a client address, or an IPv6 /64),
    at most `per_hour` registrations in any hour and `pending_per_source` clients without a
    consent; from everyone, `max_clients`."""

    source: str
    per_hour: int
    pending_per_source: int
    max_clients: int


class OAuthBackend(ABC):
    @abstractmethod
    async def register_oauth_client(self, client_id: str, client_secret: str | None,
                                    client_name: str | None, info: dict[str, Any],
                                    limits: RegistrationLimits) -> None:
        """Store a dynamically registered client, recording its source. Clients that never got
        a consent are pruned after a day. Raises RateLimited (with retry_after_seconds) when a
        limit of `limits` is reached; registrations from one source are counted one at a time,
        so concurrent ones cannot overshoot."""

    @abstractmethod
    async def oauth_client(self, client_id: str) -> dict[str, Any] | None:
        """{client_id, client_secret, client_name, info}, or None."""

    @abstractmethod
    async def create_oauth_grant(self, actor: Actor, consent: Consent,
                                 code_ttl_seconds: int) -> tuple[int, str]:
        """Record the operator's consent and issue its authorization code: (grant id, code).
        The scope is validated like create_token's (InvalidInput). Audited (oauth.consent)."""

    @abstractmethod
    async def oauth_code(self, code: str) -> dict[str, Any] | None:
        """The code's request and grant (whether used, revoked, when it expires), or None."""

    @abstractmethod
    async def redeem_oauth_code(self, actor: Actor, code: str, access_ttl: int,
                                refresh_ttl: int) -> IssuedTokens | None:
        """Spend the code (once) and issue the grant's first tokens. None when the code is
        spent, expired or its grant revoked. Audited (oauth.grant)."""

    @abstractmethod
    async def oauth_refresh_token(self, token: str) -> dict[str, Any] | None:
        """The refresh token's grant (whether used and how many seconds ago, revoked, when it
        expires), or None."""

    @abstractmethod
    async def rotate_oauth_refresh(self, actor: Actor, token: str, access_ttl: int,
                                   refresh_ttl: int, grace_seconds: int) -> IssuedTokens | None:
        """Spend the refresh token (once) and issue a new access and refresh token of the same
        grant; audited (oauth.refresh). A token spent less than `grace_seconds` ago answers the
        same pair again (`replayed`; oauth.refresh_replay) while that pair's refresh token is
        unused and its grant and access token live. None otherwise: spent (a reuse), expired or
        revoked."""

    @abstractmethod
    async def oauth_access_token(self, token: str) -> dict[str, Any] | None:
        """The access token's row and grant (for the revocation endpoint), or None."""

    @abstractmethod
    async def revoke_oauth_grant(self, actor: Actor, grant_id: int, why: str) -> bool:
        """Revoke the grant and every token it issued (the family); False when it was already
        revoked. Audited (oauth.revoke, or oauth.code_reuse / oauth.refresh_reuse)."""

    @abstractmethod
    async def list_oauth_grants(self) -> list[dict[str, Any]]:
        """Every grant (active first) with its client's name and scope; never a secret."""
