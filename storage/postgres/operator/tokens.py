"""`TokenStore`: the token gate's lookups (a PostgresBackend mixin over `PgCore`).

Tokens are stored as SHA-256 digests, never in plaintext; the dashboard shows a short prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from ....config import SURFACES
from ...principal import Principal, TokenLimits
from ..core import PgCore, retry_once_if_disconnected
from ..errors import translate
from ..queries import q
from ..rows import Conn

TOKEN_PREFIX = "mh_"


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_prefix(token: str) -> str:
    # Enough to tell tokens apart on a dashboard, far too little to guess the rest.
    return token[: len(TOKEN_PREFIX) + 6]


class TokenStore(PgCore):
    """Implements the token half of `CoreBackend`."""

    async def authenticate(self, token: str) -> Principal | None:
        if not token or len(token) > 200:
            return None
        digest = hash_token(token)

        # Every /mcp request passes here: one autocommit round trip, no transaction (the
        # tokens table is not tenant data, so no RLS scope is needed; behind a pooler the role
        # and timeout travel with the statement). No cache: a rotated or revoked token must
        # stop working at once, in every process.
        async def lookup(verify: bool) -> dict[str, Any] | None:
            try:
                async with self.connection(verify=verify) as conn:
                    return await self.fetchone_outside_tx(
                        conn, q("tokens.find_active_by_hash"), {"token_hash": digest})
            except (psycopg.Error, PoolTimeout) as exc:
                raise translate(exc, committing=False) from exc

        # A read, so retried like the tools' reads: it is the first query of every request,
        # the one that meets a connection whose backend died a moment ago.
        row = await retry_once_if_disconnected(lookup, retry_safe=True)
        # The lookup is by an index on the hash; the final comparison is constant-time anyway
        # so no code path compares secret material byte by byte with early exit.
        if row is None or not hmac.compare_digest(bytes(row["token_hash"]), digest):
            return None
        namespaces = tuple(row["namespaces"]) if row["namespaces"] is not None else None
        return Principal(
            token_id=row["id"],
            surface=row["surface"],
            namespaces=namespaces,
            read_only=row["read_only"],
            prefix=row["prefix"],
            tool_profile=row["tool_profile"],
            limits=TokenLimits(row["max_in_flight"], row["rate_per_minute"], row["rate_burst"]),
        )

    async def seed_surface_tokens(self, web_token: str | None) -> dict[str, str]:
        created: dict[str, str] = {}
        for surface in SURFACES:
            token = web_token if (surface == "web" and web_token) else new_token()

            async def insert(conn: Conn, surface: str = surface, token: str = token
                             ) -> dict[str, Any] | None:
                cur = await conn.execute(
                    q("tokens.insert_surface_if_absent"),
                    {
                        "surface": surface,
                        "token_hash": hash_token(token),
                        "prefix": token_prefix(token),
                    },
                )
                return await cur.fetchone()

            if await self._run("*", insert, retry_safe=False):
                created[surface] = token
        return created
