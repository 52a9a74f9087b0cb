"""Server-rendered pages under /admin: the headers every one is sent with, and rendering.

Each package renders its own templates; the layout (`base.html`) and the error page
(`error.html`) are here, in web/templates, found after the package's own folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from fastapi.responses import HTMLResponse, RedirectResponse

TEMPLATES = Path(__file__).resolve().parent / "templates"
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


class Pages:
    """The pages of one package: its templates in `folder`, then the shared ones."""

    def __init__(self, folder: Path | None = None) -> None:
        folders = [TEMPLATES] if folder is None else [folder, TEMPLATES]
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folders),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )

    def page(self, template: str, status: int = 200, headers: dict[str, str] | None = None,
             **context: Any) -> HTMLResponse:
        body = self._env.get_template(template).render(**context)
        merged = {**SECURITY_HEADERS, **(headers or {})}
        return HTMLResponse(body, status_code=status, headers=merged)

    def error(self, status: int, title: str, message: str,
              headers: dict[str, str] | None = None) -> HTMLResponse:
        return self.page("error.html", status, headers, title=title, message=message)


def redirect(url: str) -> RedirectResponse:
    """303 See Other: the answer to a form post, so a reload never repeats it."""
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)
