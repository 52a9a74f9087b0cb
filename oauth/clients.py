"""What a dynamically registered client may declare (RFC 7591). Registration is open to anyone
on the network, so everything it stores is bounded, and a redirect URI must be one a code can
safely be sent to: https, or http on the loopback interface (a native client's local listener).
The SDK's handler has already parsed the metadata and minted the client's id and secret."""

from __future__ import annotations

from ipaddress import IPv6Address, ip_address, ip_network
from urllib.parse import urlsplit

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 100
MAX_CLIENTS = 10_000  # registered and not yet pruned (unconsented ones go after a day)
MAX_SOURCE_CHARS = 64
AUTH_METHODS = {"none", "client_secret_post", "client_secret_basic"}
GRANT_TYPES = {"authorization_code", "refresh_token"}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def registration_source(host: str | None) -> str:
    """What registrations are counted by: the client's address (uvicorn's, which is the
    X-Forwarded-For of a MEMHUB_TRUSTED_PROXIES peer only), and for IPv6 its /64: one
    subscriber's prefix, whose 2^64 addresses would otherwise each count as a new client."""
    if not host:
        return "unknown"
    try:
        address = ip_address(host)
    except ValueError:
        return host[:MAX_SOURCE_CHARS]
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ip_network(f"{address}/64", strict=False))
    return str(address)


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` may not receive codes, or None."""
    if len(uri) > MAX_URI_CHARS:
        return f"a redirect URI is limited to {MAX_URI_CHARS} characters"
    parts = urlsplit(uri)
    if parts.fragment or "#" in uri:
        return "a redirect URI may not have a fragment"
    if not parts.hostname or parts.username or parts.password:
        return "a redirect URI needs a host and no user information"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and _loopback(parts.hostname):
        return None
    return "a redirect URI must be https, or http on the loopback interface"


def check_registration(client: OAuthClientInformationFull) -> None:
    """Raise RegistrationError (RFC 7591 §3.2.2) for metadata memhub does not accept."""
    uris = [str(u) for u in client.redirect_uris or []]
    if not uris or len(uris) > MAX_REDIRECT_URIS:
        raise RegistrationError("invalid_redirect_uri",
                                f"register 1 to {MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            raise RegistrationError("invalid_redirect_uri", problem)
    if client.client_name is not None and len(client.client_name) > MAX_NAME_CHARS:
        raise RegistrationError("invalid_client_metadata",
                                f"client_name is limited to {MAX_NAME_CHARS} characters")
    if client.token_endpoint_auth_method not in AUTH_METHODS:
        raise RegistrationError("invalid_client_metadata",
                                "token_endpoint_auth_method must be one of "
                                + ", ".join(sorted(AUTH_METHODS)))
    if not set(client.grant_types) <= GRANT_TYPES:
        raise RegistrationError("invalid_client_metadata",
                                "grant_types may only be authorization_code and refresh_token")
    for field in ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri"):
        value = getattr(client, field, None)
        if value is not None and len(str(value)) > MAX_URI_CHARS:
            raise RegistrationError("invalid_client_metadata", f"{field} is too long")
