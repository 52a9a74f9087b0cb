"""The operator's side of an OAuth authorization: log in with the /admin password (its
lockout, CSRF checks and cookie), then approve or deny the client on a consent page that
chooses its surface, namespaces, read-only or read-write and tool profile exactly as the
dashboard's "create token" form does.

Everything is under /admin, so the /admin session cookie (Path=/admin, SameSite=Strict)
reaches it. A request that arrives from another site (claude.ai's redirect) carries no
SameSite=Strict cookie, so the operator logs in on the consent page itself: that login is
the dashboard's (`web.operator.Operator.log_in`), only its success leads back to the consent
page.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import Response
from mcp.server.auth.provider import construct_redirect_uri

from ..config import SURFACES
from ..errors import MemhubError
from ..storage.oauth import Consent
from ..web.forms import namespaces_chosen
from ..web.operator import Operator, Refused
from ..web.pages import SECURITY_HEADERS, Pages, redirect
from ..web.sessions import Session, SessionManager, new_session
from .provider import CODE_TTL_SECONDS, MemhubOAuthProvider

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
LOGIN_ERRORS = {401: "Wrong password.", 403: "The login was refused. Reload the page and retry.",
                429: "Too many failed logins from your address. Try again later."}


def _origin(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}"


class ConsentPages:
    def __init__(self, operator: Operator, provider: MemhubOAuthProvider) -> None:
        self.operator = operator
        self.provider = provider
        self.pages = Pages(HERE / "templates")

    def _expired(self) -> Response:
        return self.pages.error(400, "Authorization request expired",
                                "This authorization request is invalid or has expired. Start "
                                "connecting again from your MCP client.")

    async def _pending(self, signed: str | None) -> tuple[str, dict[str, Any]] | None:
        """The signed authorization request a page carries and what it asks, or None when it
        is absent, tampered with or expired (MemhubOAuthProvider.pending)."""
        pending = await self.provider.pending(signed)
        if signed is None or pending is None:
            return None
        return signed, pending

    async def show(self, request: Request) -> Response:
        found = await self._pending(request.query_params.get("request"))
        if found is None:
            return self._expired()
        signed, pending = found
        manager = await self.operator.manager()
        session = await self.operator.session(request)
        if session is None or not session.authed:
            session = session or new_session(authed=False)
            response = self._login_form(manager, session, signed)
            manager.issue(response, request, session)
            return response
        return await self._consent_form(manager, session, pending, signed)

    def _login_form(self, manager: SessionManager, session: Session, signed: str,
                    status: int = 200, error: str | None = None,
                    headers: dict[str, str] | None = None) -> Response:
        return self.pages.page("oauth_login.html", status, headers,
                               csrf=manager.csrf_token(session), request_token=signed,
                               configured=self.operator.settings.admin_password is not None,
                               error=error)

    async def _consent_form(self, manager: SessionManager, session: Session,
                            pending: dict[str, Any], signed: str, status: int = 200,
                            error: str | None = None) -> Response:
        client = await self.provider.get_client(pending["client_id"])
        if client is None:
            return self._expired()
        redirect_uri = pending["redirect_uri"]
        # The approval answers with a redirect to the client; Chromium applies form-action to
        # a form's redirects, so the client's origin is allowed as well as this one.
        csp = SECURITY_HEADERS["Content-Security-Policy"].replace(
            "form-action 'self'", f"form-action 'self' {_origin(redirect_uri)}")
        return self.pages.page(
            "oauth_consent.html", status, {"Content-Security-Policy": csp},
            csrf=manager.csrf_token(session), request_token=signed,
            client_name=client.client_name or client.client_id, client_id=client.client_id,
            redirect_uri=redirect_uri, resource=pending["resource"], surfaces=SURFACES,
            error=error)

    async def login(self, request: Request) -> Response:
        """The dashboard's login (same lockout, CSRF, audit and cookie); on success back to
        the consent page instead of the dashboard."""
        outcome = await self.operator.log_in(request)
        field = (await request.form()).get("request")
        found = await self._pending(field if isinstance(field, str) else None)
        if found is None:
            if isinstance(outcome, Session):
                return await self.operator.admit(request, outcome, "/admin")
            return self._expired()
        signed, _ = found
        if isinstance(outcome, Session):
            return await self.operator.admit(
                request, outcome, "/admin/oauth/consent?" + urlencode({"request": signed}))
        status = outcome.status if isinstance(outcome, Refused) else outcome.status_code
        retry = outcome.retry_after if isinstance(outcome, Refused) else 0
        manager = await self.operator.manager()
        session = await self.operator.session(request) or new_session(authed=False)
        return self._login_form(manager, session, signed, status=status,
                                error=LOGIN_ERRORS.get(status, "Login refused."),
                                headers={"Retry-After": str(retry)} if retry else None)

    async def decide(self, request: Request) -> Response:
        posted = await self.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        session, form = posted
        found = await self._pending(form.get("request"))
        if found is None:
            return self._expired()
        signed, pending = found
        actor = self.operator.actor(request)
        storage = self.operator.rt.storage()
        reply = {"state": pending["state"], "iss": str(self.provider.urls.issuer)}
        if form.get("decision") != "approve":
            await storage.audit(actor, "oauth.deny", detail={"client_id": pending["client_id"]})
            return redirect(construct_redirect_uri(
                pending["redirect_uri"], error="access_denied", **reply))
        try:
            consent = Consent(
                client_id=pending["client_id"], surface=form.get("surface", "").strip(),
                namespaces=namespaces_chosen(form), read_only=form.get("access") == "read",
                tool_profile=form.get("tool_profile") or "full", resource=pending["resource"],
                scopes=list(pending["scopes"]), redirect_uri=pending["redirect_uri"],
                redirect_given=bool(pending["redirect_given"]),
                code_challenge=pending["code_challenge"])
            grant_id, code = await storage.create_oauth_grant(actor, consent, CODE_TTL_SECONDS)
        except MemhubError as err:
            manager = await self.operator.manager()
            return await self._consent_form(manager, session, pending, signed,
                                            status=err.http_status, error=err.message)
        logger.info("oauth consent", extra={"grant_id": grant_id, "client_id": consent.client_id})
        return redirect(construct_redirect_uri(pending["redirect_uri"], code=code, **reply))
