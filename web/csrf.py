"""CSRF defence for every state-changing /admin request, in two independent layers:

1. The browser's own word on where the request came from: a cross-site `Sec-Fetch-Site`, or an
   `Origin` that is not this server's, is refused before anything else is looked at.
2. A per-session token in each form (the session id signed under the CSRF salt), compared in
   constant time. Clients that send neither header (curl, old browsers) still need it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request

from .sessions import Session, SessionManager

ALLOWED_FETCH_SITES = {"same-origin", "none"}


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def allowed_origins(request: Request, public_url: str | None) -> set[str]:
    host = request.headers.get("host", "").lower()
    # The scheme is uvicorn's, from X-Forwarded-Proto only when a trusted proxy sent it.
    origins = {f"{request.url.scheme}://{host}"}
    if public_url:
        origins.add(_origin_of(public_url))
    return origins


def origin_problem(request: Request, public_url: str | None) -> str | None:
    """Why the request's provenance headers are unacceptable, or None when they are fine."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ALLOWED_FETCH_SITES:
        return f"Sec-Fetch-Site is {site!r}"
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() not in allowed_origins(request, public_url):
        return "Origin does not match this server"
    return None


def token_problem(
    manager: SessionManager, session: Session | None, token: str | None
) -> str | None:
    if session is None:
        return "no session"
    if not token:
        return "missing CSRF token"
    if not manager.csrf_valid(session, token):
        return "wrong CSRF token"
    return None
