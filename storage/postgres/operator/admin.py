"""AdminBackend on PostgreSQL. Every query runs in a transaction scoped '*' (the operator sees
all namespaces); token changes and their audit rows commit together."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from psycopg.types.json import Jsonb

from ....config import SURFACES
from ....errors import Conflict, InvalidInput, NotFound
from ...admin import Actor
from ...principal import NAMESPACE_RE, TOKEN_LIMIT_BOUNDS, check_tool_profile
from ..core import ALL_NAMESPACES, PgCore
from ..queries import q
from ..rows import Conn, row_of
from .tokens import hash_token, new_token, token_prefix

SURFACE_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
MAX_TOKEN_NAMESPACES = 64
MAX_LABEL_CHARS = 100
MAX_TOKENS_LISTED = 500



def validate_surface(surface: str) -> str:
    if not isinstance(surface, str) or not SURFACE_RE.fullmatch(surface):
        raise InvalidInput(
            "surface must be 1-32 chars of a-z, 0-9 or '-', starting with a letter or digit",
            field="surface",
        )
    return surface


def validate_namespaces(namespaces: list[str] | None) -> list[str] | None:
    """None: every namespace (an explicit choice). A list: exactly those names, sorted. An
    empty list or a blank name is refused, never read as "every namespace": an empty shell
    variable or a blank form field must not mint an unscoped token."""
    if namespaces is None:
        return None
    if not namespaces:
        raise InvalidInput(
            "a scoped token needs at least one namespace; an unscoped token is an explicit "
            "choice (no namespace list at all)",
            field="namespaces",
        )
    names = sorted({n.strip() if isinstance(n, str) else "" for n in namespaces})
    if len(names) > MAX_TOKEN_NAMESPACES:
        raise InvalidInput(
            f"a token may name at most {MAX_TOKEN_NAMESPACES} namespaces", field="namespaces"
        )
    for name in names:
        if not NAMESPACE_RE.fullmatch(name):
            raise InvalidInput(
                f"bad namespace {name!r}: 1-64 chars of a-z, 0-9, '.', '_' or '-'",
                field="namespaces",
            )
    return names


def public_token(row: dict[str, Any]) -> dict[str, Any]:
    """A token row as shown to operators: ids, scope and times (ISO 8601), never a hash."""
    out = {
        "id": row["id"],
        "surface": row["surface"],
        "kind": row["kind"],
        "prefix": row["prefix"],
        "namespaces": list(row["namespaces"]) if row["namespaces"] is not None else None,
        "read_only": row["read_only"],
        "tool_profile": row["tool_profile"],
        "label": row["label"],
        "created_at": row["created_at"].isoformat(),
        "revoked_at": row["revoked_at"].isoformat() if row["revoked_at"] else None,
        "replaces": row["replaces"],
        # The token's own limits; None: the server's default (MEMHUB_TOKEN_*).
        "limits": {name: row[name] for name in TOKEN_LIMIT_BOUNDS},
    }
    out["active"] = out["revoked_at"] is None
    return out


def _audit_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "at": row["at"].isoformat(),
        "actor": row["actor"],
        "action": row["action"],
        "source": row["source"],
        "token_id": row["token_id"],
        "token_prefix": row["token_prefix"],
        "detail": row["detail"],
    }


async def _audit(
    conn: Conn,
    actor: Actor,
    action: str,
    *,
    token_id: int | None = None,
    token_prefix: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        q("admin.insert_audit"),
        {
            "actor": actor.name[:200],
            "action": action,
            "source": (actor.source or None) and actor.source[:200],
            "token_id": token_id,
            "token_prefix": token_prefix,
            "detail": Jsonb(detail or {}),
        },
    )


class AdminStore(PgCore):
    """Mixin over PgCore (uses `_run`)."""

    # --- tokens ---------------------------------------------------------------------------
    async def list_tokens(self) -> list[dict[str, Any]]:
        async def read(conn: Conn) -> list[dict[str, Any]]:
            cur = await conn.execute(q("admin.list_tokens"), {"limit": MAX_TOKENS_LISTED})
            return [public_token(r) for r in await cur.fetchall()]

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

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
        surface = validate_surface(surface)
        names = validate_namespaces(namespaces)
        tool_profile = check_tool_profile(tool_profile)
        label = (label or "").strip() or None
        if label is not None and len(label) > MAX_LABEL_CHARS:
            raise InvalidInput(f"label is limited to {MAX_LABEL_CHARS} chars", field="label")
        token = new_token()

        async def write(conn: Conn) -> dict[str, Any]:
            cur = await conn.execute(
                q("admin.insert_token"),
                {
                    "surface": surface,
                    "kind": "scoped",
                    "token_hash": hash_token(token),
                    "prefix": token_prefix(token),
                    "namespaces": names,
                    "read_only": bool(read_only),
                    "label": label,
                    "replaces": None,
                    "tool_profile": tool_profile,
                    **dict.fromkeys(TOKEN_LIMIT_BOUNDS),
                },
            )
            row = public_token(await row_of(cur))
            await _audit(conn, actor, "token.create", token_id=row["id"],
                         token_prefix=row["prefix"],
                         detail={"surface": surface, "namespaces": names,
                                 "read_only": bool(read_only), "tool_profile": tool_profile})
            return row

        row = await self._run(ALL_NAMESPACES, write, retry_safe=False)
        return {**row, "token": token}

    async def rotate_surface(self, actor: Actor, surface: str) -> dict[str, Any]:
        if surface not in SURFACES:
            raise InvalidInput(
                f"unknown surface {surface!r}; surfaces are {', '.join(SURFACES)}",
                field="surface",
            )
        token = new_token()

        async def write(conn: Conn) -> dict[str, Any]:
            # Lock the current token so two rotations of one surface serialise; the partial
            # unique index refuses a second active successor if they still race.
            cur = await conn.execute(
                q("admin.active_surface_token_for_update"), {"surface": surface}
            )
            old = await cur.fetchone()
            if old is not None:
                await conn.execute(q("admin.revoke"), {"id": old["id"]})
            cur = await conn.execute(
                q("admin.insert_token"),
                {
                    "surface": surface,
                    "kind": "surface",
                    "token_hash": hash_token(token),
                    "prefix": token_prefix(token),
                    "namespaces": None,
                    "read_only": False,
                    "label": None,
                    "replaces": old["id"] if old else None,
                    "tool_profile": "full",
                    **{name: old[name] if old else None for name in TOKEN_LIMIT_BOUNDS},
                },
            )
            row = public_token(await row_of(cur))
            await _audit(
                conn,
                actor,
                "token.rotate",
                token_id=row["id"],
                token_prefix=row["prefix"],
                detail={
                    "surface": surface,
                    "revoked_id": old["id"] if old else None,
                    "revoked_prefix": old["prefix"] if old else None,
                },
            )
            return row

        try:
            row = await self._run(ALL_NAMESPACES, write, retry_safe=False)
        except Conflict as err:
            raise Conflict(
                f"another rotation of {surface!r} committed first",
                remedy="Reload the token list; rotate again only if you still need to.",
            ) from err
        return {**row, "token": token}

    async def revoke_token(self, actor: Actor, token_id: int) -> dict[str, Any]:
        async def write(conn: Conn) -> dict[str, Any]:
            cur = await conn.execute(q("admin.revoke"), {"id": token_id})
            done = await cur.fetchone()
            if done is None:
                cur = await conn.execute(q("admin.get_token"), {"id": token_id})
                if await cur.fetchone() is None:
                    raise NotFound(f"no token with id {token_id}", remedy="List tokens first.")
                raise Conflict(f"token {token_id} is already revoked", remedy="Nothing to do.")
            await _audit(
                conn,
                actor,
                "token.revoke",
                token_id=done["id"],
                token_prefix=done["prefix"],
                detail={"surface": done["surface"], "kind": done["kind"]},
            )
            cur = await conn.execute(q("admin.get_token"), {"id": token_id})
            return public_token(await row_of(cur))

        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    # --- audit ----------------------------------------------------------------------------
    async def audit(
        self,
        actor: Actor,
        action: str,
        *,
        token_id: int | None = None,
        token_prefix: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        async def write(conn: Conn) -> None:
            await _audit(
                conn, actor, action, token_id=token_id, token_prefix=token_prefix, detail=detail
            )

        await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def recent_audit(self, limit: int = 20) -> list[dict[str, Any]]:
        async def read(conn: Conn) -> list[dict[str, Any]]:
            cur = await conn.execute(q("admin.recent_audit"), {"limit": max(1, min(limit, 500))})
            return [_audit_row(r) for r in await cur.fetchall()]

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

    # --- overview -------------------------------------------------------------------------
    async def overview(self, days: int = 30) -> dict[str, Any]:
        async def read(conn: Conn) -> dict[str, Any]:
            counts: dict[str, dict[str, int]] = {}
            cur = await conn.execute(q("admin.memories_by_namespace_status"))
            for row in await cur.fetchall():
                counts.setdefault(row["namespace"], {})[row["status"]] = row["n"]
            cur = await conn.execute(q("admin.today_utc"))
            clock = await row_of(cur)
            today = clock["today"]
            cur = await conn.execute(q("admin.writes_per_surface_per_day"), {"days": days})
            rows = await cur.fetchall()
            cur = await conn.execute(q("admin.embedding_queue"))
            queue = dict(await row_of(cur))
            series_days = [today - timedelta(days=days - 1 - i) for i in range(days)]
            index = {d: i for i, d in enumerate(series_days)}
            writes: dict[str, list[int]] = {}
            for row in rows:
                per_day = writes.setdefault(row["surface"], [0] * days)
                if row["day"] in index:
                    per_day[index[row["day"]]] += row["n"]
            return {
                "now": clock["now"].isoformat(),
                "namespaces": counts,
                "days": [d.isoformat() for d in series_days],
                "writes": writes,
                "embedding_queue": queue,
            }

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)
