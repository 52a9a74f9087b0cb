"""The operator's limits: a token's own limits (requests in flight, a rate) and a namespace's
quota (live memories, stored bytes), set from the dashboard and memhub-admin, each change
audited. The token limits are applied by the gateway (gateway/token_limits.py); a quota by the
database, on every write (migration 0042)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from ..errors import InvalidInput
from .admin import Actor
from .principal import TokenLimits

QUOTA_BOUNDS = {"max_memories": 2**31 - 1, "max_bytes": 2**62}
_SIZE = re.compile(r"^(\d{1,19})\s*([kmgt]?)(?:i?b)?$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str, field: str) -> int:
    """A size as an operator writes it: bytes, or with K, M, G or T (powers of 1024): 5000000,
    50M, 2GiB. Raises InvalidInput naming `field`."""
    match = _SIZE.match(text.strip())
    if match is None:
        raise InvalidInput(f"{field} is not a size: give bytes, or a number with K, M, G or T "
                           "(50M, 2G)", field=field)
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def check_quota(max_memories: Any, max_bytes: Any) -> tuple[int | None, int | None]:
    """A quota's limits, each an integer >= 0 or None (no limit on it). Raises InvalidInput
    naming the limit."""
    out = []
    for name, value in (("max_memories", max_memories), ("max_bytes", max_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value <= QUOTA_BOUNDS[name]):
            raise InvalidInput(f"{name} must be an integer from 0 to {QUOTA_BOUNDS[name]}, or "
                               "empty for no limit", field=name)
        out.append(value)
    return out[0], out[1]


class LimitsBackend(ABC):
    @abstractmethod
    async def set_token_limits(self, actor: Actor, token_id: int,
                               limits: TokenLimits) -> dict[str, Any]:
        """Set an active token's own limits (each None: the server's default); they apply from
        its next request. The token as list_tokens shows it. Audited ("token.limits").
        NOT_FOUND for a token that is not an active surface or scoped token (an OAuth
        connection's tokens use the defaults)."""

    @abstractmethod
    async def set_namespace_quota(self, actor: Actor, namespace: str, *,
                                  max_memories: int | None,
                                  max_bytes: int | None) -> dict[str, Any]:
        """Set a namespace's quota (both None: clear it), counting its use afresh; waits for
        the writes in flight and holds new writes back for the time of the count. The quota
        as namespace_quota answers. Audited ("quota.set", "quota.clear"). INVALID_INPUT for a
        bad namespace or limit."""

    @abstractmethod
    async def namespace_quota(self, namespace: str) -> dict[str, Any]:
        """{"namespace", "max_memories", "max_bytes", "memories", "bytes", "set_by", "set_at"}:
        the quota (limits None when there is none) and the namespace's use (live memories,
        stored bytes). INVALID_INPUT for a bad namespace."""

    @abstractmethod
    async def list_namespace_quotas(self) -> list[dict[str, Any]]:
        """Every namespace's quota with its use, as namespace_quota answers, by namespace."""
