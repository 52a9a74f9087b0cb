"""The operator's side of an OAuth authorization: log in with the /admin password (its
lockout, CSRF checks and cookie), then approve or deny the client on a consent page that
chooses its surface, namespaces, read-only or read-write and tool profile exactly as the
dashboard's "create token" form does. And the dashboard's revocation of a grant.

Everything is under /admin, so the /admin session cookie (Path=/admin, SameSite=Strict)
reaches it. A request that arrives from another site (claude.ai's redirect) carries no
SameSite=Strict cookie, so the operator logs in on the consent page itself: that login is
the admin login (`Admin.login`), only its success leads back to the consent page.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import Response
from mcp.server.auth.provider import construct_redirect_uri

from ..admin.forms import namespaces_chosen
from ..admin.routes import SECURITY_HEADERS, Admin
from ..admin.sessions import new_session
from ..config import SURFACES
from ..errors import MemhubError
from ..storage.oauth import REVOKED_BY_OPERATOR, Consent
from .provider import CODE_TTL_SECONDS, MemhubOAuthProvider

logger = logging.getLogger(__name__)

LOGIN_ERRORS = {401: "Wrong password.", 403: "The login was refused. Reload the page and retry.",
                429: "Too many failed logins from your address. Try again later."}


def _origin(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}"


class ConsentPages:
    def __init__(self, admin: Admin, provider: MemhubOAuthProvider) -> None:
        self.admin = admin
        self.provider = provider

    def _expired(self) -> Response:
        return self.admin.error(400, "Authorization request expired",
                                "This authorization request is invalid or has expired. Start "
                                "connecting again from your MCP client.")

    async def show(self, request: Request) -> Response:
        signed = request.query_params.get("request")
        pending = await self.provider.pending(signed)
        if pending is None:
            return self._expired()
        manager = await self.admin.manager()
        session = await self.admin.session(manager, request)
        if session is None or not session.authed:
            session = session or new_session(authed=False)
            response = self._login_form(manager, session, signed)
            manager.issue(response, request, session)
            return response
        return await self._consent_form(request, manager, session, pending, signed)

    def _login_form(self, manager, session, signed: str, status: int = 200,
                    error: str | None = None, headers=None) -> Response:
        return self.admin.page("oauth_login.html", status, headers,
                               csrf=manager.csrf_token(session), request_token=signed,
                               configured=self.admin.settings.admin_password is not None,
                               error=error)

    async def _consent_form(self, request: Request, manager, session, pending: dict,
                            signed: str, status: int = 200, error: str | None = None) -> Response:
        client = await self.provider.get_client(pending["client_id"])
        if client is None:
            return self._expired()
        redirect = pending["redirect_uri"]
        # The approval answers with a redirect to the client; Chromium applies form-action to
        # a form's redirects, so the client's origin is allowed as well as this one.
        csp = SECURITY_HEADERS["Content-Security-Policy"].replace(
            "form-action 'self'", f"form-action 'self' {_origin(redirect)}")
        return self.admin.page(
            "oauth_consent.html", status, {"Content-Security-Policy": csp},
            csrf=manager.csrf_token(session), request_token=signed,
            client_name=client.client_name or client.client_id, client_id=client.client_id,
            redirect_uri=redirect, resource=pending["resource"], surfaces=SURFACES,
            error=error)

    async def login(self, request: Request) -> Response:
        """The admin login (same lockout, CSRF, audit and cookie); on success back to the
        consent page instead of the dashboard."""
        response = await self.admin.login(request)
        signed = (await request.form()).get("request")
        signed = signed if isinstance(signed, str) else None
        if await self.provider.pending(signed) is None:
            return response if response.status_code == 303 else self._expired()
        if response.status_code == 303:
            response.headers["location"] = "/admin/oauth/consent?" + urlencode({"request": signed})
            return response
        manager = await self.admin.manager()
        session = await self.admin.session(manager, request) or new_session(authed=False)
        retry = response.headers.get("retry-after")
        return self._login_form(manager, session, signed, status=response.status_code,
                                error=LOGIN_ERRORS.get(response.status_code, "Login refused."),
                                headers={"Retry-After": retry} if retry else None)

    async def decide(self, request: Request) -> Response:
        session, form, stop = await self.admin.authed_post(request)
        if stop:
            return stop
        signed = form.get("request")
        pending = await self.provider.pending(signed)
        if pending is None:
            return self._expired()
        actor = self.admin.actor(request)
        storage = self.admin.rt.storage()
        reply = {"state": pending["state"], "iss": str(self.provider.urls.issuer)}
        if form.get("decision") != "approve":
            await storage.audit(actor, "oauth.deny", detail={"client_id": pending["client_id"]})
            return self.admin.redirect(construct_redirect_uri(
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
            manager = await self.admin.manager()
            return await self._consent_form(request, manager, session, pending, signed,
                                            status=err.http_status, error=err.message)
        logger.info("oauth consent", extra={"grant_id": grant_id, "client_id": consent.client_id})
        return self.admin.redirect(construct_redirect_uri(pending["redirect_uri"], code=code,
                                                          **reply))

    async def revoke(self, request: Request, grant_id: int) -> Response:
        """The dashboard's Revoke button on an OAuth connection: the grant and every token
        it issued stop at once."""
        _, _, stop = await self.admin.authed_post(request)
        if stop:
            return stop
        storage = self.admin.rt.storage()
        if not await storage.revoke_oauth_grant(self.admin.actor(request), grant_id,
                                                REVOKED_BY_OPERATOR):
            return await self.admin.dashboard(request, status=409,
                                              error=f"OAuth grant {grant_id} is not active.")
        return self.admin.redirect("/admin?notice=revoked")
