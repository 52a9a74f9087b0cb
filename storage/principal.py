"""Who is calling and what it may touch: the token's `Principal` and the namespace check every
tool runs before any query."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..config import Settings
from ..errors import Forbidden, InvalidInput

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# Which tools a token's client sees and may call (tools/tool_profiles.py; migration 0027).
TOOL_PROFILES = ("core", "full")


# What a token's own limits may be (migration 0041's CHECKs); None: the server's default.
TOKEN_LIMIT_BOUNDS = {"max_in_flight": (1, 1000), "rate_per_minute": (0, 1_000_000),
                      "rate_burst": (1, 100_000)}


class EffectiveLimits(NamedTuple):
    """A token's limits as applied: its own, else the server's defaults."""

    max_in_flight: int
    rate_per_minute: int  # 0: no rate limit
    rate_burst: int


@dataclass(frozen=True)
class TokenLimits:
    """A token's limits (gateway/token_limits.py): requests in flight at once, and a sustained
    rate per minute with its burst (0: no rate limit). None: the server's default."""

    max_in_flight: int | None = None
    rate_per_minute: int | None = None
    rate_burst: int | None = None

    @classmethod
    def of(cls, values: dict[str, Any]) -> TokenLimits:
        """Checked values (a missing or None one: the default). Raises InvalidInput naming the
        limit and its bounds."""
        out = {}
        for name, (low, high) in TOKEN_LIMIT_BOUNDS.items():
            value = values.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not low <= value <= high):
                raise InvalidInput(f"{name} must be an integer from {low} to {high}, or empty "
                                   "for the server's default", field=name)
            out[name] = value
        return cls(**out)

    def resolved(self, settings: Settings) -> EffectiveLimits:
        """The token's own limits, else the server's defaults (MEMHUB_TOKEN_*)."""
        return EffectiveLimits(
            settings.token_max_in_flight if self.max_in_flight is None else self.max_in_flight,
            settings.token_rate_per_minute if self.rate_per_minute is None
            else self.rate_per_minute,
            settings.token_rate_burst if self.rate_burst is None else self.rate_burst)

    def as_dict(self) -> dict[str, int | None]:
        return {"max_in_flight": self.max_in_flight, "rate_per_minute": self.rate_per_minute,
                "rate_burst": self.rate_burst}


@dataclass(frozen=True)
class Principal:
    """Who is calling: the token's surface and what it may touch. Never a tool argument."""

    token_id: int
    surface: str
    namespaces: tuple[str, ...] | None  # None: every namespace
    read_only: bool = False
    prefix: str = ""
    tool_profile: str = "full"
    limits: TokenLimits = field(default_factory=TokenLimits)

    def can_see(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


def check_tool_profile(value: str | None) -> str:
    """A token's tool profile (None: 'full'). Raises InvalidInput naming the choices."""
    value = "full" if value is None else value
    if value not in TOOL_PROFILES:
        raise InvalidInput(f"tool_profile must be one of {', '.join(TOOL_PROFILES)}",
                           field="tool_profile")
    return value


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
