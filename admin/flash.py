"""One display of a token the dashboard just issued, across a POST-redirect-GET.

Rotate and create answer their POST with a 303 to /admin, so reloading the page shows the
dashboard again instead of repeating the action (a second rotation would revoke the token
just shown). The new token has to cross that redirect without being written anywhere whole,
so it is split with a one-time pad: the database keeps the random pad (`admin_flash`,
migration 0022) under the SHA-256 of a random flash id, for this admin session only, and a
short-lived signed cookie carries the flash id and the token XOR the pad. Neither half alone
says anything about the token, and nothing reaches a URL or a log. The next GET of /admin
deletes the row as it reads it and clears the cookie: the token is shown once.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from ..storage.admin import AdminBackend
from ..web.sessions import COOKIE_PATH, MAX_COOKIE_CHARS, is_https

FLASH_COOKIE = "memhub_admin_flash"
FLASH_SALT = "memhub.admin.flash"
FLASH_TTL_SECONDS = 120  # the redirect is followed at once; this only bounds a stray copy
MAX_TOKEN_BYTES = 256


@dataclass(frozen=True)
class Sealed:
    """A token split in two: `cookie` for the browser, `pad` for the database."""

    cookie: str
    id_hash: bytes
    pad: bytes


@dataclass(frozen=True)
class Claim:
    """What a flash cookie holds: which row to take, and the masked token."""

    id_hash: bytes
    masked: bytes

    def unmask(self, pad: bytes) -> str | None:
        if len(pad) != len(self.masked):
            return None
        try:
            return bytes(a ^ b for a, b in zip(self.masked, pad, strict=True)).decode("ascii")
        except UnicodeDecodeError:
            return None


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


def _id_hash(flash_id: bytes) -> bytes:
    return hashlib.sha256(flash_id).digest()


class FlashBox:
    def __init__(self, secret: bytes) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=FLASH_SALT)

    def seal(self, token: str) -> Sealed:
        plain = token.encode("ascii")
        if not 0 < len(plain) <= MAX_TOKEN_BYTES:
            raise ValueError("a token is 1-256 ASCII bytes")
        pad = secrets.token_bytes(len(plain))
        flash_id = secrets.token_bytes(24)
        masked = bytes(a ^ b for a, b in zip(plain, pad, strict=True))
        cookie = self._serializer.dumps({"id": _b64(flash_id), "masked": _b64(masked)})
        return Sealed(cookie=cookie, id_hash=_id_hash(flash_id), pad=pad)

    def claim(self, request: Request) -> Claim | None:
        """The request's flash, or None (absent, expired, tampered or malformed)."""
        raw = request.cookies.get(FLASH_COOKIE)
        if not raw or len(raw) > MAX_COOKIE_CHARS:
            return None
        try:
            data = self._serializer.loads(raw, max_age=FLASH_TTL_SECONDS)
            flash_id = base64.urlsafe_b64decode(data["id"])
            masked = base64.urlsafe_b64decode(data["masked"])
        except BadData:
            return None
        except Exception:  # a mangled payload shows no token, never a 500
            return None
        if not flash_id or not masked:
            return None
        return Claim(id_hash=_id_hash(flash_id), masked=masked)

    async def stash(self, storage: AdminBackend, request: Request, response: Response,
                    sid_hash: bytes, token: str, detail: dict[str, Any]) -> None:
        """Keep `token` for one display to this session: the pad in the database, the rest in
        a cookie set on `response`. `detail` (what to show with it) must hold no secret."""
        sealed = self.seal(token)
        await storage.put_admin_flash(sealed.id_hash, sid_hash, sealed.pad, detail,
                                      FLASH_TTL_SECONDS)
        self.issue(response, request, sealed)

    async def take(self, storage: AdminBackend, request: Request,
                   sid_hash: bytes) -> dict[str, Any] | None:
        """The stashed detail with its `token`, once; None when there is nothing (left) to
        show this session. The caller clears the cookie."""
        claim = self.claim(request)
        if claim is None:
            return None
        taken = await storage.take_admin_flash(claim.id_hash, sid_hash)
        if taken is None:
            return None
        pad, detail = taken
        token = claim.unmask(pad)
        return {**detail, "token": token} if token else None

    @staticmethod
    def present(request: Request) -> bool:
        return FLASH_COOKIE in request.cookies

    @staticmethod
    def issue(response: Response, request: Request, sealed: Sealed) -> None:
        response.set_cookie(FLASH_COOKIE, sealed.cookie, max_age=FLASH_TTL_SECONDS,
                            path=COOKIE_PATH, httponly=True, samesite="strict",
                            secure=is_https(request))

    @staticmethod
    def clear(response: Response, request: Request) -> None:
        response.delete_cookie(FLASH_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict",
                               secure=is_https(request))
