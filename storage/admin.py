"""The operator's storage area: token lifecycle, the audit trail, login backoff, the
cookie-signing secret and the overview. Shared by the /admin dashboard and memhub-admin."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Actor:
    """Who performs an admin action and from where (recorded in the audit, never a secret)."""

    name: str  # "admin" (dashboard) or "cli:<os user>"
    source: str | None  # client address, or "local" for the CLI


@dataclass(frozen=True)
class LoginAttempt:
    """The answer to reserve_login_attempt."""

    retry_after: int  # > 0: refused, the client is locked out for this many more seconds
    lock_seconds: int  # the lock this attempt has already set should its password be wrong


class AdminBackend(ABC):
    @abstractmethod
    async def list_tokens(self) -> list[dict[str, Any]]:
        """Every token (active first), without hashes. Never the plaintext."""

    @abstractmethod
    async def create_token(
        self,
        actor: Actor,
        *,
        surface: str,
        namespaces: list[str] | None,
        read_only: bool,
        label: str | None = None,
        tool_profile: str = "full",
    ) -> dict[str, Any]:
        """Create an extra (kind 'scoped') token; the result carries the plaintext `token`,
        which is returned only here. `namespaces` None is every namespace (an explicit
        choice); an empty list is refused. `tool_profile`: 'core' or 'full', the tools its
        client sees and may call. Audited. Raises InvalidInput for a bad surface, an empty or
        bad namespace list, a bad label or tool profile."""

    @abstractmethod
    async def rotate_surface(self, actor: Actor, surface: str) -> dict[str, Any]:
        """Revoke the surface's active token (if any) and create its successor in ONE
        transaction; the result carries the new plaintext `token`. Other surfaces are not
        touched. Audited. Raises InvalidInput for an unknown surface."""

    @abstractmethod
    async def revoke_token(self, actor: Actor, token_id: int) -> dict[str, Any]:
        """Revoke one token. Audited. Raises NotFound (no such token) or Conflict (already
        revoked)."""

    @abstractmethod
    async def audit(
        self,
        actor: Actor,
        action: str,
        *,
        token_id: int | None = None,
        token_prefix: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Append one audit row (time from the database)."""

    @abstractmethod
    async def recent_audit(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest audit rows, newest first."""

    @abstractmethod
    async def reserve_login_attempt(self, source: str) -> LoginAttempt:
        """Count a login attempt from this client as a failure BEFORE its password is
        checked, atomically: refused (retry_after > 0) while the client is locked out, and
        the attempt that reaches the threshold locks it at once, so concurrent attempts
        cannot all be evaluated. A successful login then calls clear_login_failures."""

    @abstractmethod
    async def clear_login_failures(self, source: str) -> None:
        """Forget a client's failures (after a successful login)."""

    @abstractmethod
    async def end_admin_session(self, sid_hash: bytes, ttl_seconds: int) -> None:
        """Refuse this /admin session (by its id's SHA-256) from now on: logout."""

    @abstractmethod
    async def admin_session_ended(self, sid_hash: bytes) -> bool:
        """Whether this /admin session was ended by logging out."""

    @abstractmethod
    async def put_admin_flash(self, id_hash: bytes, sid_hash: bytes, pad: bytes,
                              detail: dict[str, Any], ttl_seconds: int) -> None:
        """Keep one half of a just-issued token (a one-time pad; never the token) and what
        to show with it, for the /admin session `sid_hash`, for `ttl_seconds`."""

    @abstractmethod
    async def take_admin_flash(self, id_hash: bytes,
                               sid_hash: bytes) -> tuple[bytes, dict[str, Any]] | None:
        """The pad and detail kept by put_admin_flash, deleted as they are read (one
        display); None when absent, expired, already read or another session's."""

    @abstractmethod
    async def admin_secret(self, name: str) -> bytes:
        """A random secret generated once and shared by every process (insert-once)."""

    @abstractmethod
    async def overview(self, days: int = 30) -> dict[str, Any]:
        """Memories per namespace and status, writes per surface per day over `days` days,
        the embedding queue's depth, and the database's current date."""

    @abstractmethod
    async def grant_repo(self, actor: Actor, namespace: str, repo: str, *,
                         allow: bool) -> dict[str, Any]:
        """Grant (`allow`) or withdraw one GitHub repository ("owner/name") for a namespace:
        the repositories whose claims coord_reconcile may ask GitHub about and a webhook
        delivery may decide there. {"namespace", "repo" (lower case), "allowed", "changed"}.
        Audited ("github.allow" / "github.deny"). INVALID_INPUT for a bad namespace or
        repository."""

    @abstractmethod
    async def list_repo_grants(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """The granted repositories (of one namespace, or all), by namespace and repository:
        [{"namespace", "repo", "granted_by", "granted_at"}]. INVALID_INPUT for a bad
        namespace."""
