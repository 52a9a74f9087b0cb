"""The operator at the browser, on every page under /admin: the key and manager of the session
cookie, the session a request carries, the checks every form post passes, and the password
login with its per-address throttling.

The dashboard (admin/) and the OAuth consent pages (oauth/) share one `Operator`: one login,
one cookie and one lockout serve both. Each renders its own login form from what `log_in`
answers.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response

from ..runtime import Runtime
from ..storage.admin import Actor
from .csrf import origin_problem, token_problem
from .forms import read_form
from .pages import Pages, redirect
from .sessions import (
    SECRET_NAME,
    Session,
    SessionManager,
    configured_key,
    new_session,
    session_hash,
)

logger = logging.getLogger(__name__)

MAX_PASSWORD_CHARS = 1024
MAX_FORM_BYTES = 16 * 1024  # every form under /admin is a few hundred bytes
ADMIN_ACTOR = "admin"
LOGIN_URL = "/admin/login"

_refusals = Pages()


def _hash(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8")).digest()


def password_matches(given: str, expected: str) -> bool:
    # Equal-length digests compared in constant time: neither the length nor a common prefix
    # of the real password leaks through timing.
    return hmac.compare_digest(_hash(given), _hash(expected))


def client_address(request: Request) -> str:
    # uvicorn replaced the peer with X-Forwarded-For only when the peer is one of
    # MEMHUB_TRUSTED_PROXIES (app.proxy_options); nobody else can choose the address that
    # the login backoff counts and the audit records.
    return request.client.host if request.client else "unknown"


@dataclass(frozen=True)
class Refused:
    """A login refused after its form passed the checks: why (as audited), the status to show
    the login form again with, for which session, and for how long a throttled address waits."""

    reason: str  # "password_unset" (403), "throttled" (429) or "bad_password" (401)
    status: int
    session: Session
    retry_after: int = 0


class Operator:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.settings = rt.settings
        self._secret: bytes | None = None
        self._manager: SessionManager | None = None

    async def secret(self) -> bytes:
        """The key the operator's cookies are signed with, each purpose under its own salt."""
        if self._secret is None:
            self._secret = (configured_key(self.settings.session_secret)
                            or await self.rt.storage().admin_secret(SECRET_NAME))
        return self._secret

    async def manager(self) -> SessionManager:
        if self._manager is None:
            secret = await self.secret()
            self._manager = SessionManager(secret, self.settings.admin_session_ttl_seconds)
        return self._manager

    async def session(self, request: Request) -> Session | None:
        """The request's session (SessionManager.load), unless it is a logged-in one that was
        ended by logging out: a copy of that cookie is signed and unexpired, but dead."""
        session = (await self.manager()).load(request)
        if session is not None and session.authed and \
                await self.rt.storage().admin_session_ended(session_hash(session)):
            return None
        return session

    def actor(self, request: Request) -> Actor:
        return Actor(ADMIN_ACTOR, client_address(request))

    async def guarded_post(self, request: Request) -> tuple[Session, dict[str, str]] | Response:
        """The session and form of a post from this site, within the size limit and with its
        CSRF token; otherwise the page that refuses it."""
        problem = origin_problem(request, self.settings.public_url)
        if problem:
            logger.warning("admin request refused", extra={"reason": problem})
            return _refusals.error(403, "Refused", f"Cross-site request refused: {problem}.")
        manager = await self.manager()
        session = await self.session(request)
        declared = request.headers.get("content-length", "")
        if not declared.isdigit() or int(declared) > MAX_FORM_BYTES:
            return _refusals.error(
                413, "Too large", f"Form bodies are limited to {MAX_FORM_BYTES} bytes."
            )
        form = await read_form(request)
        problem = token_problem(manager, session, form.get("csrf"))
        if problem or session is None:  # None only with a problem ("no session")
            logger.warning("admin request refused", extra={"reason": problem})
            return _refusals.error(
                403, "Refused", f"The form was refused ({problem}). Reload the page and retry."
            )
        return session, form

    async def authed_post(self, request: Request) -> tuple[Session, dict[str, str]] | Response:
        """As guarded_post, from a logged-in session; otherwise to the login page."""
        posted = await self.guarded_post(request)
        if isinstance(posted, Response):
            return posted
        if not posted[0].authed:
            return redirect(LOGIN_URL)
        return posted

    async def log_in(self, request: Request) -> Session | Refused | Response:
        """The posted password checked: a new logged-in session to `admit`, the refusal of a
        wrong or throttled one, or the page that refuses a form failing guarded_post. Every
        outcome is audited; the address's failures are counted before the password is
        checked."""
        storage = self.rt.storage()
        actor = self.actor(request)
        source = actor.source or "unknown"
        if self.settings.admin_password is None:
            # Refused whatever the form holds; nothing changes but the audit line.
            await storage.audit(actor, "login.failure", detail={"reason": "password_unset"})
            return Refused("password_unset", 403, new_session(authed=False))
        posted = await self.guarded_post(request)
        if isinstance(posted, Response):
            return posted
        session, form = posted
        # Counted before the password is checked, atomically: simultaneous guesses from one
        # address get no more evaluations than sequential ones.
        attempt = await storage.reserve_login_attempt(source)
        if attempt.retry_after:
            await storage.audit(actor, "login.failure", detail={"reason": "throttled"})
            return Refused("throttled", 429, session, attempt.retry_after)
        given = form.get("password", "")[:MAX_PASSWORD_CHARS]
        if not password_matches(given, self.settings.admin_password.get_secret_value()):
            await storage.audit(
                actor, "login.failure",
                detail={"reason": "bad_password", "locked_seconds": attempt.lock_seconds},
            )
            return Refused("bad_password", 401, session)
        await storage.clear_login_failures(source)
        await storage.audit(actor, "login.success")
        return new_session(authed=True)

    async def admit(self, request: Request, session: Session, url: str) -> Response:
        """303 to `url`, setting the cookie of the session `log_in` just opened."""
        response = redirect(url)
        (await self.manager()).issue(response, request, session)
        return response
