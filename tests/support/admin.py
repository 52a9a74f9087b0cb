"""Driving /admin over HTTP in tests: log in, read the CSRF token, post forms."""

from __future__ import annotations

import re
from contextlib import contextmanager

import httpx

PASSWORD = "correct horse battery staple"  # tests.conftest.make_settings' admin_password
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = _CSRF.search(html)
    assert match, "no CSRF field on the page"
    return match.group(1)


@contextmanager
def browser(base_url: str, **kwargs):
    with httpx.Client(base_url=base_url, follow_redirects=False, timeout=30, **kwargs) as client:
        yield client


def login(client: httpx.Client, password: str = PASSWORD, headers=None) -> httpx.Response:
    page = client.get("/admin/login", headers=headers)
    return client.post(
        "/admin/login", data={"csrf": csrf_of(page.text), "password": password}, headers=headers
    )


def logged_in_csrf(client: httpx.Client) -> str:
    response = login(client)
    assert response.status_code == 303, response.text
    dashboard = client.get("/admin")
    assert dashboard.status_code == 200
    return csrf_of(dashboard.text)


def fresh_token(html: str, card: str) -> str:
    match = re.search(rf'id="fresh-token-{re.escape(card)}">([^<]+)<', html)
    assert match, f"no fresh token shown for {card}"
    return match.group(1).strip()


def confirmed(csrf: str) -> dict[str, str]:
    """The form of a confirmed rotate or revoke (admin/confirm.py): its CSRF token and the
    confirmation the confirm page's button sends."""
    return {"csrf": csrf, "confirm": "yes"}


def act(client: httpx.Client, path: str, data: dict, headers=None) -> httpx.Response:
    """POST a dashboard action (rotate, create), which answers with a 303 to /admin
    (POST-redirect-GET), and return the page that redirect shows."""
    response = client.post(path, data=data, headers=headers)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/admin"
    return client.get("/admin")
