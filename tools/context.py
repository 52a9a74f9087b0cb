"""What every tool needs: the caller's principal and the storage backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastmcp.server.dependencies import get_http_request

from errors import Unauthorized, Unavailable
from storage.base import Principal, check_namespace

if TYPE_CHECKING:
    from config import Settings
    from storage.base import StorageBackend


@dataclass
class Runtime:
    """Process-wide services, filled in by the app lifespan."""

    settings: Settings
    backend: StorageBackend | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def storage(self) -> StorageBackend:
        if self.backend is None:
            raise Unavailable("the storage backend is not ready yet")
        return self.backend


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
