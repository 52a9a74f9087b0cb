"""The storage boundary. Tools speak to a `StorageBackend`; only its implementation sees SQL.

Each capability area declares its abstract methods in its own mixin ABC (`base_*.py`), and
`StorageBackend` is their union, so areas can grow without editing one shared class body.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from errors import Forbidden, InvalidInput
from storage.base_admin import AdminBackend
from storage.base_memories import MemoryBackend
from storage.base_search import SearchBackend
from storage.base_work import WorkBackend

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the token's surface and what it may touch. Never a tool argument."""

    token_id: int
    surface: str
    namespaces: tuple[str, ...] | None  # None: every namespace
    read_only: bool = False
    prefix: str = ""

    def can_see(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


def check_namespace(principal: Principal, namespace: str, *, write: bool) -> str:
    """Validate `namespace` and enforce the token's scope before any query runs.

    Raises InvalidInput for a malformed name, Forbidden when the token may not touch it
    (or may only read it and this is a write).
    """
    if not isinstance(namespace, str) or not NAMESPACE_RE.fullmatch(namespace):
        raise InvalidInput(
            "namespace must be 1-64 chars of a-z, 0-9, '.', '_' or '-', starting with a letter "
            "or digit",
            field="namespace",
        )
    if not principal.can_see(namespace):
        raise Forbidden(f"this token is not scoped to namespace {namespace!r}")
    if write and principal.read_only:
        raise Forbidden("this token is read-only", remedy="Use a read-write token to write.")
    return namespace


class CoreBackend(ABC):
    """Lifecycle, health and the token gate."""

    @abstractmethod
    async def open(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def ping(self) -> None:
        """Raise Unavailable when the database does not answer."""

    @abstractmethod
    async def authenticate(self, token: str) -> Principal | None:
        """The principal for an active token, or None. Constant-time on the token's hash."""

    @abstractmethod
    async def seed_surface_tokens(self, web_token: str | None) -> dict[str, str]:
        """Create missing surface tokens; return {surface: plaintext} for those created now."""

    @abstractmethod
    async def stats(self, principal: Principal) -> dict[str, Any]:
        """Counts per visible namespace and status, and queue depths."""


class StorageBackend(CoreBackend, AdminBackend, MemoryBackend, SearchBackend, WorkBackend, ABC):
    """Everything the tools may ask of storage."""
