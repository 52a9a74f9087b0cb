"""Where this authorization server and its one protected resource live."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mcp.server.auth.routes import build_resource_metadata_url, validate_issuer_url
from mcp.shared.auth_utils import resource_url_from_server_url
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter

from ..config import Settings

logger = logging.getLogger(__name__)

# RFC 8414 compares issuers as strings: "https://host" must not become "https://host/".
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


@dataclass(frozen=True)
class OAuthUrls:
    issuer: AnyHttpUrl
    resource: AnyHttpUrl  # this server's /mcp: the only resource a token is issued for
    resource_metadata: str  # RFC 9728 metadata URL named in a 401's WWW-Authenticate

    def consent(self, query: str) -> str:
        return f"{str(self.issuer).rstrip('/')}/admin/oauth/consent?{query}"


def base_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def oauth_urls(settings: Settings) -> OAuthUrls | None:
    """The URLs, or None when OAuth is not served: switched off, no admin password (nobody
    could consent), or an issuer that is neither https nor loopback (RFC 8414)."""
    if not settings.oauth_enabled or settings.admin_password is None:
        return None
    base = base_url(settings)
    try:
        issuer = _URL.validate_python(base)
        validate_issuer_url(issuer)
    except ValueError as exc:
        logger.warning("oauth not served", extra={"reason": str(exc).splitlines()[0]})
        return None
    resource = _URL.validate_python(base + "/mcp")
    return OAuthUrls(issuer=issuer, resource=resource,
                     resource_metadata=str(build_resource_metadata_url(resource)))


def same_resource(requested: str, ours: AnyHttpUrl) -> bool:
    """RFC 8707: a resource indicator names exactly this server's /mcp (scheme and host
    compared case-insensitively, a trailing slash ignored); a parent or child path does not."""
    try:
        canonical = resource_url_from_server_url(requested)
    except ValueError:
        return False
    return canonical.rstrip("/") == resource_url_from_server_url(ours).rstrip("/")
