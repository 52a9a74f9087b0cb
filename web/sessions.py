"""The operator's session on every page under /admin (the dashboard and the OAuth consent
pages): an itsdangerous-signed cookie; the server stores only the sessions ended by logging
out (their ids' SHA-256, until the cookie would have expired: migration 0012), so a copy of a
logged-out cookie is refused.

The cookie carries a random session id and whether it has logged in. Its signature carries
the time it was issued, and every request checks its age against the TTL, so an expired or
tampered cookie reads as "no session" (logged out), never as an error. Each purpose signs with
its own salt, so a value signed for one purpose (a CSRF token) is never valid as another (a
session).

The key is MEMHUB_SESSION_SECRET when set, otherwise a random secret generated once and stored
in the database: sessions survive restarts and are valid on every memhub process. Settings
holds no blank or short value (config.py refuses a short one at start and reads a blank one as
unset), so every user of the key (this cookie, the OAuth request signer) makes the same choice
through `configured_key`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from itsdangerous import BadData, Signer, URLSafeTimedSerializer
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import Response

COOKIE_NAME = "memhub_admin"
COOKIE_PATH = "/admin"
MAX_COOKIE_CHARS = 4096
SESSION_SALT = "memhub.admin.session"
CSRF_SALT = "memhub.admin.csrf"
SECRET_NAME = "admin.session"


@dataclass(frozen=True)
class Session:
    sid: str
    authed: bool


def new_session(*, authed: bool) -> Session:
    # A fresh id on every login, so a session id planted before login is worthless after it.
    return Session(sid=secrets.token_urlsafe(24), authed=authed)


def session_hash(session: Session) -> bytes:
    """How an ended session is recorded server-side (logout): its id's SHA-256, never the id."""
    return hashlib.sha256(session.sid.encode()).digest()


def is_https(request: Request) -> bool:
    # The scheme uvicorn resolved: it applies X-Forwarded-Proto only when the peer is one of
    # MEMHUB_TRUSTED_PROXIES (app.proxy_options); from anyone else the header means nothing.
    return request.url.scheme == "https"


class SessionManager:
    def __init__(self, secret: bytes, ttl_seconds: int) -> None:
        self.ttl = ttl_seconds
        self._serializer = URLSafeTimedSerializer(secret, salt=SESSION_SALT)
        self._csrf = Signer(secret, salt=CSRF_SALT)

    def load(self, request: Request) -> Session | None:
        """The request's valid session, or None (absent, expired, tampered or malformed)."""
        raw = request.cookies.get(COOKIE_NAME)
        if not raw or len(raw) > MAX_COOKIE_CHARS:
            return None
        try:
            data = self._serializer.loads(raw, max_age=self.ttl)
        except BadData:
            return None
        except Exception:  # a mangled payload must log the user out, not raise a 500
            return None
        if not isinstance(data, dict):
            return None
        sid, authed = data.get("sid"), data.get("authed")
        if not isinstance(sid, str) or not sid or not isinstance(authed, bool):
            return None
        return Session(sid=sid, authed=authed)

    def dumps(self, session: Session) -> str:
        return self._serializer.dumps({"sid": session.sid, "authed": session.authed})

    def issue(self, response: Response, request: Request, session: Session) -> None:
        response.set_cookie(
            COOKIE_NAME,
            self.dumps(session),
            max_age=self.ttl,
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=is_https(request),
        )

    def clear(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            COOKIE_NAME,
            path=COOKIE_PATH,
            httponly=True,
            samesite="strict",
            secure=is_https(request),
        )

    # --- CSRF tokens: the session id signed under the CSRF salt -----------------------------
    def csrf_token(self, session: Session) -> str:
        return self._csrf.sign(session.sid.encode()).decode()

    def csrf_valid(self, session: Session, token: str | None) -> bool:
        if not token or len(token) > 512:
            return False
        expected = self.csrf_token(session)
        return hmac.compare_digest(expected.encode(), token.encode())


def secret_from_setting(value: str) -> bytes:
    # Normalise any operator-chosen string to a fixed-size key.
    return hashlib.sha256(value.encode("utf-8")).digest()


def configured_key(session_secret: SecretStr | None) -> bytes | None:
    """The key MEMHUB_SESSION_SECRET sets, or None: use the one stored in the database."""
    if session_secret is None:
        return None
    return secret_from_setting(session_secret.get_secret_value())
