"""The dashboard's limit pages: a token's page (its own limits, settable, with its use in this
process) and a namespace's page (its quota, settable, with its use). A blank field is the
server's default for a token's limit, and no limit for a quota; both blank clears a quota.
Each change is a POST from a logged-in session (CSRF-checked, audited), answered with a
redirect back to the page."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from ..errors import InvalidInput, MemhubError
from ..storage.limits import parse_size
from ..storage.principal import NAMESPACE_RE, TOKEN_LIMIT_BOUNDS, TokenLimits
from ..web.pages import redirect
from .routes import Admin

SAVED = "saved"


def _number(form: dict[str, str], field: str) -> int | None:
    text = form.get(field, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise InvalidInput(f"{field} must be a whole number, or empty", field=field)
    return int(text)


class LimitPages:
    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self.rt = admin.rt

    async def _authed(self, request: Request) -> str | Response:
        """The session's CSRF token, or the login page for a visitor."""
        manager = await self.admin.operator.manager()
        session = await self.admin.operator.session(request)
        if session is None or not session.authed:
            return redirect("/admin/login")
        return manager.csrf_token(session)

    # --- a token -------------------------------------------------------------------------
    async def token_page(self, request: Request, token_id: int, *, status: int = 200,
                         error: str | None = None) -> Response:
        csrf = await self._authed(request)
        if isinstance(csrf, Response):
            return csrf
        token = next((t for t in await self.rt.storage().list_tokens() if t["id"] == token_id),
                     None)
        if token is None:
            return self.admin.pages.error(404, "Not found", f"There is no token {token_id}.")
        settings = self.rt.settings
        applied = TokenLimits(**token["limits"]).resolved(settings)
        return self.admin.pages.page(
            "token.html", status, csrf=csrf, token=token, error=error,
            saved=request.query_params.get("notice") == SAVED,
            defaults={name: getattr(settings, "token_" + name) for name in TOKEN_LIMIT_BOUNDS},
            bounds=TOKEN_LIMIT_BOUNDS,
            use=self.rt.admission.usage(token_id, applied.rate_per_minute, applied.rate_burst))

    async def set_token_limits(self, request: Request, token_id: int) -> Response:
        posted = await self.admin.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        form = posted[1]
        try:
            limits = TokenLimits.of({name: _number(form, name) for name in TOKEN_LIMIT_BOUNDS})
            await self.rt.storage().set_token_limits(self.admin.operator.actor(request),
                                                     token_id, limits)
        except MemhubError as err:
            return await self.token_page(request, token_id, status=err.http_status,
                                         error=err.message)
        return redirect(f"/admin/tokens/{token_id}?notice={SAVED}")

    # --- a namespace ---------------------------------------------------------------------
    async def open_namespace(self, request: Request) -> Response:
        """The dashboard's "open a namespace" form (a GET with ?namespace=)."""
        namespace = request.query_params.get("namespace", "").strip()
        if not NAMESPACE_RE.fullmatch(namespace):
            return self.admin.pages.error(400, "Not a namespace", "A namespace is 1-64 chars "
                                          "of a-z, 0-9, '.', '_' or '-'.")
        return redirect(f"/admin/namespaces/{namespace}")

    async def namespace_page(self, request: Request, namespace: str, *, status: int = 200,
                             error: str | None = None) -> Response:
        csrf = await self._authed(request)
        if isinstance(csrf, Response):
            return csrf
        try:
            quota = await self.rt.storage().namespace_quota(namespace)
        except InvalidInput as err:
            return self.admin.pages.error(400, "Not a namespace", err.message)
        return self.admin.pages.page("namespace.html", status, csrf=csrf, quota=quota,
                                     error=error,
                                     saved=request.query_params.get("notice") == SAVED)

    async def set_quota(self, request: Request, namespace: str) -> Response:
        posted = await self.admin.operator.authed_post(request)
        if isinstance(posted, Response):
            return posted
        form = posted[1]
        try:
            size = form.get("max_bytes", "").strip()
            await self.rt.storage().set_namespace_quota(
                self.admin.operator.actor(request), namespace,
                max_memories=_number(form, "max_memories"),
                max_bytes=parse_size(size, "max_bytes") if size else None)
        except MemhubError as err:
            return await self.namespace_page(request, namespace, status=err.http_status,
                                             error=err.message)
        return redirect(f"/admin/namespaces/{namespace}?notice={SAVED}")
