"""Who is calling and what it may touch: the token's `Principal` and the namespace check every
tool runs before any query."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import Forbidden, InvalidInput

NAMESPACE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# Which tools a token's client sees and may call (tools/tool_profiles.py; migration 0027).
TOOL_PROFILES = ("core", "full")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the token's surface and what it may touch. Never a tool argument."""

    token_id: int
    surface: str
    namespaces: tuple[str, ...] | None  # None: every namespace
    read_only: bool = False
    prefix: str = ""
    tool_profile: str = "full"

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
