"""The dashboard's URLs: each page's GET and each action's POST, wired to `Admin`
(admin/routes.py). A store that is down or refuses is answered with a page, never a
traceback."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from ..errors import MemhubError
from ..runtime import Runtime
from .limits import LimitPages
from .routes import HERE, Admin

logger = logging.getLogger(__name__)


def install(app: FastAPI, rt: Runtime) -> Admin:
    admin = Admin(rt)

    async def handle(coro: Awaitable[Response]) -> Response:
        try:
            return await coro
        except MemhubError as err:
            # The store is down or refused: say so on a page, never a traceback.
            logger.warning("admin page failed", extra={"code": err.code})
            return admin.pages.error(err.http_status, "Unavailable",
                                     f"{err.message}. {err.remedy}")

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

    async def revoke_grant(request: Request, grant_id: int):
        return await handle(admin.revoke_grant(request, grant_id))

    async def ask_rotate(request: Request, surface: str):
        return await handle(admin.ask(request, lambda: admin.rotation(surface)))

    async def ask_revoke(request: Request, token_id: int):
        return await handle(admin.ask(request, lambda: admin.token_revocation(token_id)))

    async def ask_revoke_grant(request: Request, grant_id: int):
        return await handle(admin.ask(request, lambda: admin.grant_revocation(grant_id)))

    app.add_api_route("/admin", dashboard, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/", dashboard, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/login", login_page, methods=["GET"], include_in_schema=False)
    app.add_api_route("/admin/login", login, methods=["POST"], include_in_schema=False)
    app.add_api_route("/admin/logout", logout, methods=["POST"], include_in_schema=False)
    app.add_api_route("/admin/tokens", create, methods=["POST"], include_in_schema=False)
    # Each action's GET is its confirmation page; only its POST acts.
    for path, ask, act in (("/admin/surfaces/{surface}/rotate", ask_rotate, rotate),
                           ("/admin/tokens/{token_id}/revoke", ask_revoke, revoke),
                           ("/admin/oauth/grants/{grant_id}/revoke", ask_revoke_grant,
                            revoke_grant)):
        app.add_api_route(path, ask, methods=["GET"], include_in_schema=False)
        app.add_api_route(path, act, methods=["POST"], include_in_schema=False)

    async def allow_repo(request: Request):
        return await handle(admin.grant_repo(request, allow=True))

    async def deny_repo(request: Request):
        return await handle(admin.grant_repo(request, allow=False))

    async def activity(request: Request, namespace: str):
        return await handle(admin.activity(request, namespace))

    app.add_api_route("/admin/namespaces/{namespace}/activity", activity, methods=["GET"],
                      include_in_schema=False)
    app.add_api_route("/admin/github/grants", allow_repo, methods=["POST"],
                      include_in_schema=False)
    app.add_api_route("/admin/github/grants/deny", deny_repo, methods=["POST"],
                      include_in_schema=False)
    limits = LimitPages(admin)

    async def token_page(request: Request, token_id: int):
        return await handle(limits.token_page(request, token_id))

    async def set_token_limits(request: Request, token_id: int):
        return await handle(limits.set_token_limits(request, token_id))

    async def open_namespace(request: Request):
        return await handle(limits.open_namespace(request))

    async def namespace_page(request: Request, namespace: str):
        return await handle(limits.namespace_page(request, namespace))

    async def set_quota(request: Request, namespace: str):
        return await handle(limits.set_quota(request, namespace))

    for path, endpoint, method in (
            ("/admin/tokens/{token_id}", token_page, "GET"),
            ("/admin/tokens/{token_id}/limits", set_token_limits, "POST"),
            ("/admin/namespaces", open_namespace, "GET"),
            ("/admin/namespaces/{namespace}", namespace_page, "GET"),
            ("/admin/namespaces/{namespace}/quota", set_quota, "POST")):
        app.add_api_route(path, endpoint, methods=[method], include_in_schema=False)
    app.mount("/admin/static", StaticFiles(directory=HERE / "static"), name="admin-static")
    return admin
