"""The /admin dashboard: password login, one card per surface with ready-to-paste configs,
rotate / revoke / create tokens, an overview, and the audit trail.

Server-rendered (jinja2), no CDN, works without JavaScript. Every state-changing request passes
the CSRF checks in `admin/csrf.py`; every page is `no-store` and framed by nobody.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from ..admin import chart, configs
from ..config import SURFACES
from ..errors import MemhubError
from ..runtime import Runtime
from ..storage.admin import Actor
from .csrf import origin_problem, token_problem
from .flash import FlashBox
from .forms import namespaces_chosen, read_form
from .sessions import (
    SECRET_NAME,
    Session,
    SessionManager,
    new_session,
    secret_from_setting,
    session_hash,
)

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
MAX_PASSWORD_CHARS = 1024
MAX_FORM_BYTES = 16 * 1024  # every dashboard form is a few hundred bytes
ADMIN_ACTOR = "admin"
NOTICES = {
    "revoked": "Token revoked. Clients using it are refused from now on.",
    "logged-out": "Logged out.",
}
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": with it Chromium sends `Origin: null` on form posts, and the CSRF
    # Origin check would refuse the dashboard's own forms.
    "Referrer-Policy": "same-origin",
}

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


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


class Admin:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.settings = rt.settings
        self._manager: SessionManager | None = None
        self._flash: FlashBox | None = None

    # --- plumbing -------------------------------------------------------------------------
    async def manager(self) -> SessionManager:
        if self._manager is None:
            if self.settings.session_secret is not None:
                secret = secret_from_setting(self.settings.session_secret.get_secret_value())
            else:
                secret = await self.rt.storage().admin_secret(SECRET_NAME)
            self._manager = SessionManager(secret, self.settings.admin_session_ttl_seconds)
            self._flash = FlashBox(secret)
        return self._manager

    async def flash_box(self) -> FlashBox:
        await self.manager()
        assert self._flash is not None
        return self._flash

    async def session(self, manager: SessionManager, request: Request) -> Session | None:
        """The request's session (SessionManager.load), unless it is a logged-in one that was
        ended by logging out: a copy of that cookie is signed and unexpired, but dead."""
        session = manager.load(request)
        if session is not None and session.authed and \
                await self.rt.storage().admin_session_ended(session_hash(session)):
            return None
        return session

    def page(self, template: str, status: int = 200, headers: dict[str, str] | None = None,
             **context: Any) -> HTMLResponse:
        body = _env.get_template(template).render(**context)
        merged = {**SECURITY_HEADERS, **(headers or {})}
        return HTMLResponse(body, status_code=status, headers=merged)

    def redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)

    def error(self, status: int, title: str, message: str, headers=None) -> HTMLResponse:
        return self.page("error.html", status, headers, title=title, message=message)

    def actor(self, request: Request) -> Actor:
        return Actor(ADMIN_ACTOR, client_address(request))

    def mcp_url(self, request: Request) -> str:
        base = self.settings.public_url or str(request.base_url)
        return base.rstrip("/") + "/mcp"

    async def guarded_post(self, request: Request) -> tuple[Session | None, dict, Response | None]:
        """Session, form and, when the request must stop here, the response that stops it."""
        problem = origin_problem(request, self.settings.public_url)
        if problem:
            logger.warning("admin request refused", extra={"reason": problem})
            return None, {}, self.error(403, "Refused", f"Cross-site request refused: {problem}.")
        manager = await self.manager()
        session = await self.session(manager, request)
        declared = request.headers.get("content-length", "")
        if not declared.isdigit() or int(declared) > MAX_FORM_BYTES:
            return session, {}, self.error(
                413, "Too large", f"Form bodies are limited to {MAX_FORM_BYTES} bytes."
            )
        form = await read_form(request)
        problem = token_problem(manager, session, form.get("csrf"))
        if problem:
            logger.warning("admin request refused", extra={"reason": problem})
            return session, form, self.error(
                403, "Refused", f"The form was refused ({problem}). Reload the page and retry."
            )
        return session, form, None

    # --- pages ----------------------------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        manager = await self.manager()
        session = await self.session(manager, request)
        if session is not None and session.authed:
            return self.redirect("/admin")
        session = session or new_session(authed=False)
        notice = NOTICES.get(request.query_params.get("notice", ""))
        response = self.login_form(manager, session, notice=notice)
        manager.issue(response, request, session)
        return response

    def login_form(self, manager: SessionManager, session: Session, *, status: int = 200,
                   error: str | None = None, notice: str | None = None,
                   headers: dict[str, str] | None = None) -> HTMLResponse:
        return self.page(
            "login.html",
            status,
            headers,
            configured=self.settings.admin_password is not None,
            csrf=manager.csrf_token(session),
            error=error,
            notice=notice,
        )

    async def login(self, request: Request) -> Response:
        manager = await self.manager()
        storage = self.rt.storage()
        actor = self.actor(request)
        source = actor.source or "unknown"
        if self.settings.admin_password is None:
            # Refused whatever the form holds; nothing changes but the audit line.
            await storage.audit(actor, "login.failure", detail={"reason": "password_unset"})
            return self.login_form(manager, new_session(authed=False), status=403)
        session, form, stop = await self.guarded_post(request)
        if stop:
            return stop
        # Counted before the password is checked, atomically: simultaneous guesses from one
        # address get no more evaluations than sequential ones.
        attempt = await storage.reserve_login_attempt(source)
        if attempt.retry_after:
            retry_after = attempt.retry_after
            await storage.audit(actor, "login.failure", detail={"reason": "throttled"})
            return self.login_form(
                manager, session, status=429, headers={"Retry-After": str(retry_after)},
                error=f"Too many failed logins from your address. Try again in {retry_after} s.",
            )
        given = form.get("password", "")[:MAX_PASSWORD_CHARS]
        if not password_matches(given, self.settings.admin_password.get_secret_value()):
            await storage.audit(
                actor, "login.failure",
                detail={"reason": "bad_password", "locked_seconds": attempt.lock_seconds},
            )
            return self.login_form(manager, session, status=401, error="Wrong password.")
        await storage.clear_login_failures(source)
        await storage.audit(actor, "login.success")
        response = self.redirect("/admin")
        manager.issue(response, request, new_session(authed=True))
        return response

    async def logout(self, request: Request) -> Response:
        session, _, stop = await self.guarded_post(request)
        if stop:
            return stop
        manager = await self.manager()
        if session is not None and session.authed:
            await self.rt.storage().end_admin_session(session_hash(session), manager.ttl)
            await self.rt.storage().audit(self.actor(request), "logout")
        response = self.redirect("/admin/login?notice=logged-out")
        manager.clear(response, request)
        return response

    async def dashboard(self, request: Request, *, status: int = 200, show_flash: bool = False,
                        error: str | None = None) -> Response:
        """The dashboard; with `show_flash` (its GET) it also shows, once, the token that the
        redirected rotate / create just issued (admin/flash.py)."""
        manager = await self.manager()
        session = await self.session(manager, request)
        if session is None or not session.authed:
            return self.redirect("/admin/login")
        box = await self.flash_box()
        flashed = show_flash and box.present(request)
        fresh = (await box.take(self.rt.storage(), request, session_hash(session))
                 if flashed else None)
        response = await self.render_dashboard(request, manager, session, status, fresh, error)
        if flashed:
            box.clear(response, request)
        return response

    async def show_once(self, request: Request, session: Session, token: str,
                        detail: dict[str, Any]) -> Response:
        """303 to /admin, which shows `token` once: POST-redirect-GET, so a reload of the page
        never repeats the action. `detail` says where to show it; it must hold no secret."""
        response = self.redirect("/admin")
        box = await self.flash_box()
        await box.stash(self.rt.storage(), request, response, session_hash(session), token,
                        detail)
        return response

    async def render_dashboard(self, request: Request, manager: SessionManager,
                               session: Session, status: int, fresh: dict[str, Any] | None,
                               error: str | None) -> Response:
        storage = self.rt.storage()
        tokens = await storage.list_tokens()
        overview = await storage.overview()
        observations = await storage.observation_totals()
        audit = await storage.recent_audit(25)
        mcp_url = self.mcp_url(request)
        cards = []
        for surface in SURFACES:
            active = next(
                (t for t in tokens if t["kind"] == "surface" and t["surface"] == surface
                 and t["active"]),
                None,
            )
            shown = fresh["token"] if fresh and fresh.get("surface_card") == surface else None
            cards.append({
                "surface": surface,
                "token": active,
                "fresh": shown,
                "snippets": configs.snippets(surface, mcp_url, shown),
            })
        extra_fresh = fresh if fresh and not fresh.get("surface_card") else None
        return self.page(
            "dashboard.html",
            status,
            csrf=manager.csrf_token(session),
            cards=cards,
            extra_tokens=[t for t in tokens if t["kind"] != "surface"],
            oauth_grants=await storage.list_oauth_grants(),
            extra_fresh=extra_fresh,
            extra_snippets=(
                configs.snippets(None, mcp_url, extra_fresh["token"]) if extra_fresh else []
            ),
            overview=overview,
            open_observations=sum(o["open"] for o in observations.values()),
            chart_svg=chart.stacked_bars(overview["days"], overview["writes"]),
            legend=chart.legend(overview["writes"]),
            audit=audit,
            surfaces=SURFACES,
            mcp_url=mcp_url,
            notice=NOTICES.get(request.query_params.get("notice", "")),
            error=error,
        )

    async def authed_post(self, request: Request) -> tuple[Session, dict, Response | None]:
        session, form, stop = await self.guarded_post(request)
        if stop:
            return session, form, stop
        if session is None or not session.authed:
            return session, form, self.redirect("/admin/login")
        return session, form, None

    async def rotate(self, request: Request, surface: str) -> Response:
        session, _, stop = await self.authed_post(request)
        if stop:
            return stop
        try:
            row = await self.rt.storage().rotate_surface(self.actor(request), surface)
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        logger.info("token rotated", extra={"surface": surface, "token_id": row["id"]})
        token = row.pop("token")
        return await self.show_once(request, session, token, {"surface_card": surface, "row": row})

    async def revoke(self, request: Request, token_id: int) -> Response:
        _, _, stop = await self.authed_post(request)
        if stop:
            return stop
        try:
            row = await self.rt.storage().revoke_token(self.actor(request), token_id)
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        logger.info("token revoked", extra={"token_id": row["id"]})
        return self.redirect("/admin?notice=revoked")

    async def create(self, request: Request) -> Response:
        session, form, stop = await self.authed_post(request)
        if stop:
            return stop
        try:
            row = await self.rt.storage().create_token(
                self.actor(request),
                surface=form.get("surface", "").strip(),
                namespaces=namespaces_chosen(form),
                read_only=form.get("access") == "read",
                label=form.get("label") or None,
                tool_profile=form.get("tool_profile") or "full",
            )
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        logger.info("token created", extra={"token_id": row["id"], "surface": row["surface"]})
        token = row.pop("token")
        return await self.show_once(request, session, token, {"row": row})


def install(app: FastAPI, rt: Runtime) -> Admin:
    admin = Admin(rt)

    async def handle(coro) -> Response:
        try:
            return await coro
        except MemhubError as err:
            # The store is down or refused: say so on a page, never a traceback.
            logger.warning("admin page failed", extra={"code": err.code})
            return admin.error(err.http_status, "Unavailable", f"{err.message}. {err.remedy}")

    async def dashboard(request: Request):
        return await handle(admin.dashboard(request, show_flash=True))

    async def login_page(request: Request):
        return await handle(admin.login_page(request))

    async def login(request: Request):
        return await handle(admin.login(request))

    async def logout(request: Request):
        return await handle(admin.logout(request))

    async def rotate(request: Request, surface: str):
        return await handle(admin.rotate(request, surface))

    async def revoke(request: Request, token_id: int):
        return await handle(admin.revoke(request, token_id))

    async def create(request: Request):
        return await handle(admin.create(request))

    app.add_api_route("/admin", dashboard, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/", dashboard, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/login", login_page, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/login", login, methods=["POST"], include_in_schema=False)
    app.add_api_route("/admin/logout", logout, methods=["POST"], include_in_schema=False)
    app.add_api_route("/admin/tokens", create, methods=["POST"], include_in_schema=False)
    app.add_api_route(
        "/admin/surfaces/{surface}/rotate", rotate, methods=["POST"], include_in_schema=False
    )
    app.add_api_route(
        "/admin/tokens/{token_id}/revoke", revoke, methods=["POST"], include_in_schema=False
    )
    app.mount("/admin/static", StaticFiles(directory=HERE / "static"), name="admin-static")
    return admin
