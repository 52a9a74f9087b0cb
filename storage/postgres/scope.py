"""Row-level security follows the TOKEN, not only the namespace a query asks for.

A storage method asks `PgCore._tx(namespaces)` for the namespace the tool names. On its own
that would let a tool that forgot its `authorize()` call read another project: the transaction
would be opened for exactly the namespace the scoped token must not see. So the token gate
binds the authenticated principal to the request's context (`bind_caller`), and `_tx` calls
`narrow` before it sets `memhub.namespaces`: every transaction opened on the caller's behalf
is confined to the intersection of what was asked and what the token may see; an empty intersection
sees nothing and may insert nothing. A read-only token's transactions also set `memhub.read_only`,
and the database then refuses their writes (migration 0013). Every transaction names the token's
surface (`memhub.surface`): the change feed's triggers record it (migration 0028). Background work
(embedding worker, expiry sweep) and operator views run outside any request, with no caller bound,
and keep their own scope (the feed records 'system')."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar

from ..principal import Principal

# The scope of operator-wide reads and of background work: every namespace.
ALL_NAMESPACES = "*"

_CALLER: ContextVar[Principal | None] = ContextVar("memhub_caller", default=None)
READ_ONLY_GUC = "memhub.read_only"
# Who the change feed records as acting (migration 0028); unset outside a request: 'system'.
SURFACE_GUC = "memhub.surface"


def bind_caller(principal: Principal | None) -> None:
    """Confine this request's transactions to `principal`'s namespaces (set by the gate)."""
    _CALLER.set(principal)


def bound_caller() -> Principal | None:
    return _CALLER.get()


def confine(namespaces: str | Sequence[str], principal: Principal | None
            ) -> str | Sequence[str]:
    if principal is None or principal.namespaces is None:
        return namespaces
    requested = [namespaces] if isinstance(namespaces, str) else list(namespaces)
    if requested == [ALL_NAMESPACES]:
        return list(principal.namespaces)
    return [name for name in requested if name in principal.namespaces]


def narrow(namespaces: str | Sequence[str], gucs: Mapping[str, str] | None
           ) -> tuple[str | Sequence[str], dict[str, str]]:
    """What a transaction asked for `namespaces` (with settings `gucs`) may see: narrowed to
    the bound caller's scope, with its surface and read-only flag added to the settings. With
    no caller bound (background work, operator commands), both as given."""
    caller = _CALLER.get()
    settings = dict(gucs or {})
    if caller is None:
        return namespaces, settings
    settings[SURFACE_GUC] = caller.surface
    if caller.read_only:
        # The database refuses this transaction's writes too (migration 0013).
        settings[READ_ONLY_GUC] = "on"
    return confine(namespaces, caller), settings
