"""OAuthBackend on PostgreSQL (a PostgresBackend mixin over PgCore). Every statement runs in a
transaction scoped '*': none of these tables is tenant data. Codes, refresh tokens and access
tokens are generated here and stored as SHA-256 digests; the plaintext is returned once.

The pair a refresh issues is derived from the refresh token presented, keyed with a server
secret (`successor_pair`): a retry of that refresh within the grace period is answered with the
same pair by deriving it again, so no plaintext token is ever stored, encrypted or not. Without
the presented refresh token (kept only as a digest) the database and its secrets together
cannot produce the pair (docs/security.md, OAuth 2.1)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Any

from psycopg.types.json import Jsonb

from ....errors import RateLimited
from ...admin import Actor
from ...oauth import (
    CODE_REUSE,
    REFRESH_REUSE,
    REVOKED_BY_CLIENT,
    REVOKED_BY_OPERATOR,
    Consent,
    IssuedTokens,
    OAuthBackend,
    RegistrationLimits,
)
from ...principal import check_tool_profile
from ..core import ALL_NAMESPACES
from ..queries import q
from ..rows import Conn, one, one_row, row_of
from ..server_secrets import ServerSecrets
from .admin import _audit, validate_namespaces, validate_surface
from .tokens import TOKEN_PREFIX, hash_token, new_token, token_prefix

REFRESH_PREFIX = "mhr_"
REFRESH_KEY_NAME = "oauth.refresh"
MAX_GRANTS_LISTED = 500
REVOKE_ACTIONS = {
    REVOKED_BY_OPERATOR: "oauth.revoke",
    REVOKED_BY_CLIENT: "oauth.revoke",
    CODE_REUSE: "oauth.code_reuse",
    REFRESH_REUSE: "oauth.refresh_reuse",
}


def public_grant(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "client_id": row["client_id"],
        "client_name": row["client_name"] or row["client_id"],
        "surface": row["surface"],
        "namespaces": list(row["namespaces"]) if row["namespaces"] is not None else None,
        "read_only": row["read_only"],
        "tool_profile": row["tool_profile"],
        "resource": row["resource"],
        "created_at": row["created_at"].isoformat(),
        "last_issued": row["last_issued"].isoformat() if row["last_issued"] else None,
        "revoked_at": row["revoked_at"].isoformat() if row["revoked_at"] else None,
        "revoked_why": row["revoked_why"],
        "active": row["revoked_at"] is None,
    }


def successor_pair(key: bytes, refresh_token: str) -> tuple[str, str]:
    """The access and refresh token that spending `refresh_token` issues: HMAC-SHA256 under a
    server secret, 256 bits each, shaped like the random ones (`mh_`, `mhr_` and 43
    characters). The same refresh token always yields the same pair."""
    def derive(purpose: bytes) -> str:
        digest = hmac.new(key, purpose + b"\0" + refresh_token.encode("utf-8"),
                          hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    return TOKEN_PREFIX + derive(b"access"), REFRESH_PREFIX + derive(b"refresh")


def _limited(message: str, seconds: float | None, remedy: str) -> RateLimited:
    wait = max(1, int(seconds or 0) + 1)
    return RateLimited(message, remedy=remedy.format(wait=wait), retry_after_seconds=wait)


def _check_source(counts: dict[str, Any], limits: RegistrationLimits) -> None:
    if counts["this_hour"] >= limits.per_hour:
        raise _limited(f"this address registered {limits.per_hour} OAuth clients in the last hour",
                       counts["hour_frees_in"],
                       "Register again in {wait} s (Retry-After); a client registers once and "
                       "keeps its client_id.")
    if counts["pending"] >= limits.pending_per_source:
        raise _limited(f"this address has {limits.pending_per_source} OAuth clients that no "
                       "operator has approved", counts["pending_frees_in"],
                       "Finish connecting a client you registered (its consent on /admin), or "
                       "retry in {wait} s, when an unapproved one expires.")


class OAuthStore(ServerSecrets, OAuthBackend):
    """Mixin over PgCore (uses `_run`) with the server secret refreshes are derived with."""

    async def register_oauth_client(self, client_id: str, client_secret: str | None,
                                    client_name: str | None, info: dict[str, Any],
                                    limits: RegistrationLimits) -> None:
        async def write(conn: Conn) -> None:
            await conn.execute(q("oauth.lock_source"), {"source": limits.source})
            await conn.execute(q("oauth.prune_clients"))
            _check_source(await one_row(conn, "oauth.source_counts", {"source": limits.source}),
                          limits)
            cur = await conn.execute(q("oauth.count_clients"))
            if (await row_of(cur))["n"] >= limits.max_clients:
                raise RateLimited("too many OAuth clients are registered",
                                  remedy="Retry tomorrow: unconsented clients expire after a day.",
                                  retry_after_seconds=3600)
            await conn.execute(q("oauth.insert_client"), {
                "client_id": client_id, "client_secret": client_secret,
                "client_name": client_name, "info": Jsonb(info), "source": limits.source})

        await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def oauth_client(self, client_id: str) -> dict[str, Any] | None:
        if not client_id or len(client_id) > 64:
            return None

        async def read(conn: Conn) -> dict[str, Any] | None:
            cur = await conn.execute(q("oauth.get_client"), {"client_id": client_id})
            return await cur.fetchone()

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

    async def create_oauth_grant(self, actor: Actor, consent: Consent,
                                 code_ttl_seconds: int) -> tuple[int, str]:
        surface = validate_surface(consent.surface)
        names = validate_namespaces(consent.namespaces)
        tool_profile = check_tool_profile(consent.tool_profile)
        code = secrets.token_urlsafe(32)

        async def write(conn: Conn) -> int:
            cur = await conn.execute(q("oauth.insert_grant"), {
                "client_id": consent.client_id, "surface": surface, "namespaces": names,
                "read_only": consent.read_only, "tool_profile": tool_profile,
                "resource": consent.resource, "scopes": consent.scopes})
            grant_id = (await row_of(cur))["id"]
            await conn.execute(q("oauth.insert_code"), {
                "code_hash": hash_token(code), "grant_id": grant_id,
                "redirect_uri": consent.redirect_uri, "redirect_given": consent.redirect_given,
                "code_challenge": consent.code_challenge, "ttl_seconds": code_ttl_seconds})
            await _audit(conn, actor, "oauth.consent", detail={
                "grant_id": grant_id, "client_id": consent.client_id, "surface": surface,
                "namespaces": names, "read_only": consent.read_only,
                "tool_profile": tool_profile})
            return grant_id

        return await self._run(ALL_NAMESPACES, write, retry_safe=False), code

    async def oauth_code(self, code: str) -> dict[str, Any] | None:
        return await self._read_one("oauth.get_code", code)

    async def oauth_refresh_token(self, token: str) -> dict[str, Any] | None:
        return await self._read_one("oauth.get_refresh_token", token)

    async def oauth_access_token(self, token: str) -> dict[str, Any] | None:
        return await self._read_one("oauth.get_access_token", token)

    async def _read_one(self, block: str, secret: str) -> dict[str, Any] | None:
        if not secret or len(secret) > 200:
            return None

        async def read(conn: Conn) -> dict[str, Any] | None:
            cur = await conn.execute(q(block), {"token_hash": hash_token(secret),
                                                "code_hash": hash_token(secret)})
            return await cur.fetchone()

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)

    async def redeem_oauth_code(self, actor: Actor, code: str, access_ttl: int,
                                refresh_ttl: int) -> IssuedTokens | None:
        pair = new_token(), REFRESH_PREFIX + secrets.token_urlsafe(32)
        return await self._spend("oauth.use_code", {"code_hash": hash_token(code)},
                                 "oauth.grant", actor, pair, (access_ttl, refresh_ttl))

    async def rotate_oauth_refresh(self, actor: Actor, token: str, access_ttl: int,
                                   refresh_ttl: int, grace_seconds: int) -> IssuedTokens | None:
        pair = successor_pair(await self.server_key(REFRESH_KEY_NAME), token)
        replay = {"token_hash": hash_token(token), "next_access_hash": hash_token(pair[0]),
                  "next_refresh_hash": hash_token(pair[1]), "grace_seconds": grace_seconds}
        return await self._spend("oauth.use_refresh_token", {"token_hash": hash_token(token)},
                                 "oauth.refresh", actor, pair, (access_ttl, refresh_ttl),
                                 replay)

    async def _spend(self, block: str, params: dict[str, Any], action: str, actor: Actor,
                     pair: tuple[str, str], ttls: tuple[int, int],
                     replay: dict[str, Any] | None = None) -> IssuedTokens | None:
        """Mark a code or refresh token used and issue `pair` for its grant, in one
        transaction: of two concurrent uses exactly one sets used_at and gets tokens. With
        `replay`, a use that finds the token spent answers the pair again if
        `oauth.refresh_replay` finds it still current (a retry within the grace period)."""
        (access, refresh), (access_ttl, refresh_ttl) = pair, ttls

        async def write(conn: Conn) -> IssuedTokens | None:
            cur = await conn.execute(q(block), params)
            spent = await cur.fetchone()
            if spent is None:
                # A concurrent use that set used_at first has committed by now (this UPDATE
                # waited for its row lock), so this statement sees the pair it issued.
                return await self._replay(conn, actor, pair, replay) if replay else None
            cur = await conn.execute(q("oauth.grant_for_issue"), {"grant_id": spent["grant_id"]})
            grant = await cur.fetchone()
            if grant is None:  # revoked: the spend is rolled back with the transaction
                return None
            cur = await conn.execute(q("oauth.insert_access_token"), {
                "surface": grant["surface"], "token_hash": hash_token(access),
                "prefix": token_prefix(access), "namespaces": grant["namespaces"],
                "read_only": grant["read_only"], "label": grant["client_name"],
                "tool_profile": grant["tool_profile"], "ttl_seconds": access_ttl,
                "grant_id": grant["id"]})
            row = await row_of(cur)
            await conn.execute(q("oauth.insert_refresh_token"), {
                "token_hash": hash_token(refresh), "grant_id": grant["id"],
                "ttl_seconds": refresh_ttl})
            await _audit(conn, actor, action, token_id=row["id"], token_prefix=row["prefix"],
                         detail={"grant_id": grant["id"], "client_id": grant["client_id"]})
            return IssuedTokens(access_token=access, refresh_token=refresh,
                                expires_in=access_ttl, scopes=list(grant["scopes"]),
                                token_id=row["id"], grant_id=grant["id"])

        # Not retried: a replay after a lost COMMIT would find the code or token spent.
        return await self._run(ALL_NAMESPACES, write, retry_safe=False)

    async def _replay(self, conn: Conn, actor: Actor, pair: tuple[str, str],
                      params: dict[str, Any]) -> IssuedTokens | None:
        row = await one(conn, "oauth.refresh_replay", params)
        if row is None:
            return None
        await _audit(conn, actor, "oauth.refresh_replay", token_id=row["token_id"],
                     token_prefix=row["prefix"],
                     detail={"grant_id": row["grant_id"], "client_id": row["client_id"]})
        return IssuedTokens(access_token=pair[0], refresh_token=pair[1],
                            expires_in=row["expires_in"], scopes=list(row["scopes"]),
                            token_id=row["token_id"], grant_id=row["grant_id"], replayed=True)

    async def revoke_oauth_grant(self, actor: Actor, grant_id: int, why: str) -> bool:
        async def write(conn: Conn) -> bool:
            cur = await conn.execute(q("oauth.revoke_grant"), {"grant_id": grant_id, "why": why})
            done = await cur.fetchone()
            if done is None:
                return False
            await conn.execute(q("oauth.revoke_grant_tokens"), {"grant_id": grant_id})
            await _audit(conn, actor, REVOKE_ACTIONS[why], detail={
                "grant_id": grant_id, "client_id": done["client_id"], "reason": why})
            return True

        return await self._run(ALL_NAMESPACES, write, retry_safe=True)

    async def list_oauth_grants(self) -> list[dict[str, Any]]:
        async def read(conn: Conn) -> list[dict[str, Any]]:
            cur = await conn.execute(q("oauth.list_grants"), {"limit": MAX_GRANTS_LISTED})
            return [public_grant(r) for r in await cur.fetchall()]

        return await self._run(ALL_NAMESPACES, read, retry_safe=True)
