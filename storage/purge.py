"""The one destructive path: removing a memory, handoff, session, artifact or namespace for
good (migration 0023, memhub-admin purge).

Deliberately not part of `StorageBackend`: the tools are handed a `StorageBackend`, so no tool
can reach a purge even by mistake. Only the operator's command line builds a `PurgeBackend`,
on the database owner's connection (the app's role may not run the purge functions).
"""

from __future__ import annotations

import re
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from .admin import Actor
from .principal import NAMESPACE_RE

KINDS = ("memory", "handoff", "session", "artifact", "namespace")
REASON_MAX = 500
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class PurgeTarget:
    """What to purge, checked: a uuid (memory, handoff, session), a sha256 in hex (artifact;
    `namespace` limits it to one namespace's references) or a namespace name."""

    kind: str
    target: str
    namespace: str | None = None


def check_reason(reason: Any) -> str:
    """Why the operator purges, as the tombstone and the audit keep it: 1-500 characters of
    one line's worth of text (newlines and tabs allowed, other control characters not)."""
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        raise InvalidInput("a purge needs a reason (--reason)", field="reason")
    if len(text) > REASON_MAX:
        raise InvalidInput(f"the reason is limited to {REASON_MAX} characters", field="reason")
    if _CONTROL.search(text):
        raise InvalidInput("the reason may not hold control characters", field="reason")
    return text


def check_target(kind: str, target: str, namespace: str | None = None) -> PurgeTarget:
    """A `PurgeTarget`, or InvalidInput naming what is wrong."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
    value = (target or "").strip()
    if namespace is not None and (kind != "artifact" or not NAMESPACE_RE.fullmatch(namespace)):
        raise InvalidInput("--namespace limits an artifact purge to one namespace (a valid "
                           "namespace name)", field="namespace")
    if kind in ("memory", "handoff", "session"):
        try:
            value = str(uuid.UUID(value))
        except ValueError:
            raise InvalidInput(f"a {kind} is named by its id (a UUID)", field="id") from None
    elif kind == "artifact":
        value = value.lower()
        if not _SHA256.fullmatch(value):
            raise InvalidInput("an artifact is named by its sha256 (64 hex characters)",
                               field="id")
    elif not NAMESPACE_RE.fullmatch(value):
        raise InvalidInput("bad namespace: 1-64 chars of a-z, 0-9, '.', '_' or '-'", field="id")
    return PurgeTarget(kind, value, namespace)


class PurgeBackend(ABC):
    @abstractmethod
    async def purge(self, what: PurgeTarget, *, reason: str, actor: Actor) -> dict[str, Any]:
        """Remove `what` for good in ONE transaction, with its tombstone and its audit row
        (who, when, what, why; never the removed text). The answer names the tombstone, the
        rows removed per table and, for a memory, the memories relinked, retired or whose
        lineage was derived again. Raises NotFound (details: `purged_at` when it was purged
        before), InvalidInput (bad reason) or Retryable (a concurrent write won a lock race;
        nothing was removed)."""

    @abstractmethod
    async def reclaim(self, tables: list[str]) -> list[str]:
        """After a purge has committed: VACUUM (ANALYZE) the tables it touched, so the removed
        rows leave the tables' pages and the planner's statistics (which keep sampled values)
        at once; an emptied table's statistics are cleared. Returns the tables where that
        could not be done (this role does not own them; PostgreSQL before 18 for clearing)."""
