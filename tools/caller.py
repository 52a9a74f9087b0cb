"""Who is calling a tool: the principal the token gate put on the request, and the namespace
check every tool runs before it touches storage."""

from __future__ import annotations

from fastmcp.server.dependencies import get_http_request

from ..errors import Unauthorized
from ..storage.principal import Principal, check_namespace


def current_principal() -> Principal:
    """The authenticated caller (set by the token gate); never a tool argument."""
    try:
        request = get_http_request()
    except RuntimeError:
        raise Unauthorized("no authenticated HTTP request") from None
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise Unauthorized("no authenticated principal on this request")
    return principal


def authorize(namespace: str, *, write: bool) -> Principal:
    """The caller, after checking it may read (or write) `namespace`. Runs before any query."""
    principal = current_principal()
    check_namespace(principal, namespace, write=write)
    return principal
