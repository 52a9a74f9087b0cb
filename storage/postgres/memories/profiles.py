"""`ProfileStore`: namespace profiles (`namespace_init`, `namespace_profile`; a PostgresBackend
mixin over `PgCore`), and the one profile value memory_context reads (`context_quota`).

Idempotent in two ways: the same profile again is "unchanged" (no new version, whoever sends
it), and a `client_request_id` replays the first answer to the token that sent it. A different
profile replaces the stored one, last writer wins, unless the caller passes the version it read
(`expected_version`): then it is a compare-and-set, as memory_revise is. Both are offered
because both kinds of caller exist: a setup script declaring what the project should be
(re-run at will, last word wins) and a client editing one key of what it read (which must not
undo a change it never saw).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from ....errors import Conflict
from ...memory_dicts import iso
from ...principal import Principal, check_namespace
from ...profiles import check_expected_version, check_profile
from ...sanitize import wrap_untrusted
from ...work_input import REQUEST_ID_MAX, opt_key
from ..idempotency import IdempotentWrites
from ..queries import q
from ..rows import Conn, one


def profile_answer(namespace: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """A profile as the tools return it: the description wrapped as untrusted data."""
    if row is None:
        return {"namespace": namespace, "initialised": False, "profile": {}, "version": 0,
                "created_at": None, "updated_at": None, "updated_by": None}
    profile = dict(row["profile"])
    if "description" in profile:
        profile["description"] = wrap_untrusted(profile["description"])
    return {"namespace": row["namespace"], "initialised": True, "profile": profile,
            "version": row["version"], "created_at": iso(row["created_at"]),
            "updated_at": iso(row["updated_at"]), "updated_by": row["updated_by"]}


async def context_quota(conn: Conn, namespace: str) -> dict[str, float] | None:
    """The namespace's memory_context shares per kind, or None for the default (no profile,
    or a profile without `context_quota`)."""
    row = await one(conn, "profiles.context_quota", {"namespace": namespace})
    return row["quota"] if row is not None and row["quota"] is not None else None


async def restore_profile(conn: Conn, namespace: str, record: dict[str, Any]) -> bool:
    """Write an export's (checked) profile record into `namespace`, its version and times
    kept: True when it was created, False when the namespace holds the same profile already.
    Raises CONFLICT when it holds another: an import never merges or replaces a profile."""
    row = await one(conn, "profiles.get", {"namespace": namespace})
    if row is None:
        await conn.execute(q("profiles.restore"), {
            "namespace": namespace, "profile": Jsonb(record["profile"]),
            "version": record["version"], "updated_by": record["updated_by"],
            "created_at": datetime.fromisoformat(record["created_at"]),
            "updated_at": datetime.fromisoformat(record["updated_at"])})
        return True
    # The profile, not its version or times: the same declaration made here is the same.
    held = row["profile"]
    if held == record["profile"]:
        return False
    differ = sorted(set(held) ^ set(record["profile"])
                    | {k for k in held if record["profile"].get(k, held[k]) != held[k]})
    raise Conflict(
        f"namespace {namespace!r} already has another profile (keys {', '.join(differ)})",
        remedy="Nothing was imported. Import into a namespace without a profile (--namespace "
               "NEW), or give this one the file's profile first (namespace_init).",
        kind="profile", fields=differ)


class ProfileStore(IdempotentWrites):
    async def namespace_init(
        self, principal: Principal, namespace: str, profile: Any, *,
        expected_version: int | None = None, client_request_id: str | None = None,
    ) -> dict[str, Any]:
        check_namespace(principal, namespace, write=True)
        wanted = check_profile(profile)
        expected = check_expected_version(expected_version)
        request_id = opt_key(client_request_id, "client_request_id", REQUEST_ID_MAX)
        params = {"namespace": namespace, "profile": Jsonb(wanted), "author": principal.surface}

        async def write(conn: Conn) -> dict[str, Any]:
            row = await one(conn, "profiles.get_for_update", {"namespace": namespace})
            if row is None:
                if expected not in (None, 0):
                    raise _stale(namespace, expected, None)
                row = await one(conn, "profiles.insert", params)
                if row is not None:
                    return {"outcome": "created", **profile_answer(namespace, row)}
                row = await one(conn, "profiles.get_for_update", {"namespace": namespace})
                assert row is not None  # inserted by a concurrent call, and never deleted
            # Checked before the version: a retry of a write that did commit finds its own
            # profile there, one version on, and is told "unchanged" rather than CONFLICT.
            if row["profile"] == wanted:
                return {"outcome": "unchanged", **profile_answer(namespace, row)}
            if expected is not None and expected != row["version"]:
                raise _stale(namespace, expected, row)
            row = await one(conn, "profiles.update", params)
            assert row is not None
            return {"outcome": "updated", **profile_answer(namespace, row)}

        return await self._idempotent_write(
            principal, namespace, request_id, "namespace_init",
            {"profile": profile, "expected_version": expected_version}, write)

    async def namespace_profile(self, principal: Principal, namespace: str) -> dict[str, Any]:
        check_namespace(principal, namespace, write=False)

        async def read(conn: Conn) -> dict[str, Any] | None:
            return await one(conn, "profiles.get", {"namespace": namespace})

        return profile_answer(namespace, await self._run(namespace, read, retry_safe=True))


def _stale(namespace: str, expected: int, row: dict[str, Any] | None) -> Conflict:
    now = profile_answer(namespace, row)
    return Conflict(
        f"the profile of namespace {namespace!r} is at version {now['version']}, not "
        f"{expected}; nothing was written",
        remedy="Read details (the profile as it is now), decide, and call namespace_init "
               "again with expected_version = details.current_version.",
        current_version=now["version"], current_profile=now["profile"],
        updated_by=now["updated_by"], updated_at=now["updated_at"],
    )
