"""The /admin dashboard: password login, one card per surface with ready-to-paste configs,
rotate / revoke / create tokens, an overview, the audit trail, revoking an OAuth connection, and
the GitHub repositories each namespace may have its claims checked against. A token's limits and
a namespace's quota have pages of their own (admin/limits.py). Rotating and
revoking ask first, on a page of their own (admin/confirm.py).

Server-rendered (jinja2), no CDN, works without JavaScript. The login, the session and the
checks every state-changing request passes (CSRF: `web/csrf.py`) are `web/operator.py`'s,
shared with the OAuth consent pages; every page is `no-store` and framed by nobody
(`web/pages.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from ..config import SURFACES
from ..errors import MemhubError
from ..runtime import Runtime
from ..storage.oauth import REVOKED_BY_OPERATOR
from ..web.forms import namespaces_chosen
from ..web.operator import Operator, Refused
from ..web.pages import Pages, redirect
from ..web.sessions import Session, SessionManager, new_session, session_hash
from . import chart, configs, confirm
from .confirm import Confirmation
from .flash import FlashBox

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
ACTIVITY_SHOWN = 200
NOTICES = {
    "revoked": "Token revoked. Clients using it are refused from now on.",
    "logged-out": "Logged out.",
    "granted": "Repository granted: its claims in that namespace are checked from now on.",
    "denied": "Repository withdrawn: its claims in that namespace are no longer checked.",
}


class Admin:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.settings = rt.settings
        self.operator = Operator(rt)
        self.pages = Pages(HERE / "templates")
        self._flash: FlashBox | None = None

    async def flash_box(self) -> FlashBox:
        if self._flash is None:
            self._flash = FlashBox(await self.operator.secret())
        return self._flash

    def mcp_url(self, request: Request) -> str:
        base = self.settings.public_url or str(request.base_url)
        return base.rstrip("/") + "/mcp"

    # --- logging in and out ---------------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        manager = await self.operator.manager()
        session = await self.operator.session(request)
        if session is not None and session.authed:
            return redirect("/admin")
        session = session or new_session(authed=False)
        notice = NOTICES.get(request.query_params.get("notice", ""))
        response = self.login_form(manager, session, notice=notice)
        manager.issue(response, request, session)
        return response

    def login_form(self, manager: SessionManager, session: Session, *, status: int = 200,
                   error: str | None = None, notice: str | None = None,
                   headers: dict[str, str] | None = None) -> Response:
        return self.pages.page(
            "login.html",
            status,
            headers,
            configured=self.settings.admin_password is not None,
            csrf=manager.csrf_token(session),
            error=error,
            notice=notice,
        )

    async def login(self, request: Request) -> Response:
        outcome = await self.operator.log_in(request)
        if isinstance(outcome, Session):
            return await self.operator.admit(request, outcome, "/admin")
        if not isinstance(outcome, Refused):
            return outcome
        manager = await self.operator.manager()
        if outcome.reason == "throttled":
            wait = outcome.retry_after
            return self.login_form(
                manager, outcome.session, status=outcome.status,
                headers={"Retry-After": str(wait)},
                error=f"Too many failed logins from your address. Try again in {wait} s.",
            )
        error = "Wrong password." if outcome.reason == "bad_password" else None
        return self.login_form(manager, outcome.session, status=outcome.status, error=error)

    async def logout(self, request: Request) -> Response:
        posted = await self.operator.guarded_post(request)
        if isinstance(posted, Response):
            return posted
        session, _ = posted
        manager = await self.operator.manager()
        if session.authed:
            await self.rt.storage().end_admin_session(session_hash(session), manager.ttl)
            await self.rt.storage().audit(self.operator.actor(request), "logout")
        response = redirect("/admin/login?notice=logged-out")
        manager.clear(response, request)
        return response

    # --- the dashboard --------------------------------------------------------------------
    async def dashboard(self, request: Request, *, status: int = 200, show_flash: bool = False,
                        error: str | None = None) -> Response:
        """The dashboard; with `show_flash` (its GET) it also shows, once, the token that the
        redirected rotate / create just issued (admin/flash.py)."""
        manager = await self.operator.manager()
        session = await self.operator.session(request)
        if session is None or not session.authed:
            return redirect("/admin/login")
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
        response = redirect("/admin")
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
        return self.pages.page(
            "dashboard.html",
            status,
            csrf=manager.csrf_token(session),
            cards=cards,
            extra_tokens=[t for t in tokens if t["kind"] != "surface"],
            oauth_grants=await storage.list_oauth_grants(),
            repo_grants=await storage.list_repo_grants(),
            quotas=await storage.list_namespace_quotas(),
            extra_fresh=extra_fresh,
            extra_snippets=(
                configs.snippets(None, mcp_url, extra_fresh["token"]) if extra_fresh else []
            ),
            overview=overview,
            model=self.rt.embedder.status() if self.rt.embedder is not None else None,
            open_observations=sum(o["open"] for o in observations.values()),
            chart_svg=chart.stacked_bars(overview["days"], overview["writes"]),
            legend=chart.legend(overview["writes"]),
            audit=audit,
            surfaces=SURFACES,
            mcp_url=mcp_url,
            notice=NOTICES.get(request.query_params.get("notice", "")),
            error=error,
        )

    async def activity(self, request: Request, namespace: str) -> Response:
        """A namespace's latest tool calls (storage/activity.py); read-only."""
        session = await self.operator.session(request)
        if session is None or not session.authed:
            return redirect("/admin/login")
        found = await self.rt.storage().tool_activity(namespace, limit=ACTIVITY_SHOWN)
        return self.pages.page("activity.html", found=found, limit=ACTIVITY_SHOWN,
                               retention_days=self.settings.activity_retention_days)

    # --- confirmations: the page a Rotate or Revoke link opens (a GET changes nothing) -----
    async def ask(self, request: Request,
                  build: Callable[[], Awaitable[Confirmation | Response]]) -> Response:
        """The confirmation page of an action, from a logged-in session; `build` reads what the
        action would touch (or answers the page saying it cannot be done)."""
        manager = await self.operator.manager()
        session = await self.operator.session(request)
        if session is None or not session.authed:
            return redirect("/admin/login")
        asked = await build()
        if isinstance(asked, Response):
            return asked
        return self.pages.page("confirm.html", csrf=manager.csrf_token(session), ask=asked,
                               confirmed=confirm.CONFIRMED)

    async def rotation(self, surface: str) -> Confirmation | Response:
        if surface not in SURFACES:
            return self.pages.error(404, "Not found", f"There is no surface {surface!r}.")
        active = next((t for t in await self.rt.storage().list_tokens()
                       if t["kind"] == "surface" and t["surface"] == surface and t["active"]),
                      None)
        return confirm.rotation(surface, active)

    async def token_revocation(self, token_id: int) -> Confirmation | Response:
        token = next((t for t in await self.rt.storage().list_tokens() if t["id"] == token_id),
                     None)
        if token is None:
            return self.pages.error(404, "Not found", f"There is no token {token_id}.")
        if not token["active"]:
            return self.pages.error(409, "Already revoked", f"Token {token_id} is already "
                                    "revoked; nothing to do.")
        return confirm.token_revocation(token)

    async def grant_revocation(self, grant_id: int) -> Confirmation | Response:
        grant = next((g for g in await self.rt.storage().list_oauth_grants()
                      if g["id"] == grant_id), None)
        if grant is None or not grant["active"]:
            return self.pages.error(409, "Not active", f"OAuth connection {grant_id} is not "
                                    "active; nothing to do.")
        return confirm.grant_revocation(grant)

    # --- actions: each a POST from a logged-in session, answered with a redirect ---------
    async def rotate(self, request: Request, surface: str) -> Response:
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        session, form = posted
        if not confirm.confirmed(form):
            return await self.ask(request, lambda: self.rotation(surface))
        try:
            row = await self.rt.storage().rotate_surface(self.operator.actor(request), surface)
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        logger.info("token rotated", extra={"surface": surface, "token_id": row["id"]})
        token = row.pop("token")
        return await self.show_once(request, session, token, {"surface_card": surface, "row": row})

    async def revoke(self, request: Request, token_id: int) -> Response:
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        if not confirm.confirmed(posted[1]):
            return await self.ask(request, lambda: self.token_revocation(token_id))
        try:
            row = await self.rt.storage().revoke_token(self.operator.actor(request), token_id)
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        logger.info("token revoked", extra={"token_id": row["id"]})
        return redirect("/admin?notice=revoked")

    async def create(self, request: Request) -> Response:
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        session, form = posted
        try:
            row = await self.rt.storage().create_token(
                self.operator.actor(request),
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

    async def revoke_grant(self, request: Request, grant_id: int) -> Response:
        """Revoke on an OAuth connection: the grant and every token it issued stop at once."""
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        if not confirm.confirmed(posted[1]):
            return await self.ask(request, lambda: self.grant_revocation(grant_id))
        if not await self.rt.storage().revoke_oauth_grant(self.operator.actor(request), grant_id,
                                                          REVOKED_BY_OPERATOR):
            return await self.dashboard(request, status=409,
                                        error=f"OAuth grant {grant_id} is not active.")
        return redirect("/admin?notice=revoked")

    async def grant_repo(self, request: Request, *, allow: bool) -> Response:
        """Allow or deny one repository for one namespace (the form's fields)."""
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        _, form = posted
        try:
            await self.rt.storage().grant_repo(
                self.operator.actor(request), form.get("namespace", "").strip(),
                form.get("repo", "").strip(), allow=allow)
        except MemhubError as err:
            return await self.dashboard(request, status=err.http_status, error=err.message)
        return redirect("/admin?notice=" + ("granted" if allow else "denied"))
