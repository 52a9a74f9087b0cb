"""DNS-rebinding protection for every route, not only `/mcp`: a pure ASGI middleware.

A request whose `Host` is not a name this server answers to (gateway/hosts.py) is refused with
421 and memhub's JSON error (code FORBIDDEN, `details.host`, the setting that allows it)
before any route runs. fastmcp's guard refuses such hosts on `/mcp` only; without this,
`/admin` and `/artifact` answered any name, and the dashboard's ready-to-paste configs (built
from the Host when MEMHUB_PUBLIC_URL is unset) showed the caller's.

Names are compared as fastmcp compares them, so `/mcp` refuses and admits the same hosts as
before: lower case, port and IPv6 brackets dropped, shell-style patterns (`*.example.com`)
allowed, and the address the client connected to is always acceptable.

`/healthz` stays open to any Host: load balancers and container probes call it by IP address
(Kubernetes sends `Host: <pod ip>:<port>`), and it changes nothing and says only whether the
database answers, which anyone who can reach the port may ask with a correct Host anyway.

`/metrics` is open to any Host too: scrapers are pointed at an address (a static target, a
published container port, a service IP) that is often not the name memhub answers to, and
the check would buy nothing there. DNS rebinding lends a hostile page the victim's network
position and ambient credentials (cookies); `/metrics` takes only an `Authorization: Bearer`
header that such a page cannot know, and its 401 and 404 answers show nothing of the Host.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from fnmatch import fnmatchcase
from ipaddress import ip_address
from typing import Any

from ..errors import Forbidden
from .token_gate import send_error

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
OPEN_PATHS = ("/healthz", "/metrics")
SETTING = "MEMHUB_PUBLIC_URL or MEMHUB_ALLOWED_HOSTS"
_LOGGED_LIMIT = 32  # refused names logged once each, at most this many per process


def normalise_host(host: str) -> str:
    """`Host` without port or IPv6 brackets, in lower case ('' when absent)."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end != -1 else host
    if host.count(":") == 1:
        return host.rsplit(":", 1)[0]
    return host


def _unspecified(host: str) -> bool:
    try:
        return ip_address(host).is_unspecified
    except ValueError:
        return not host


class HostCheck:
    def __init__(self, app: Callable[..., Awaitable[None]], allowed: Iterable[str],
                 open_paths: tuple[str, ...] = OPEN_PATHS) -> None:
        self.app = app
        self.patterns = tuple(sorted({normalise_host(h) for h in allowed} - {""}))
        self.open_paths = open_paths
        self._logged: set[str] = set()

    def allows(self, host: str, server: tuple[str, int] | None = None) -> bool:
        name = normalise_host(host)
        if not name:
            return False
        if server and not _unspecified(normalise_host(server[0])) \
                and name == normalise_host(server[0]):
            return True
        return any(p == "*" or fnmatchcase(name, p) for p in self.patterns)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope.get("path", "") in self.open_paths:
            await self.app(scope, receive, send)
            return
        host = ""
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value.decode("latin-1")
                break
        if self.allows(host, scope.get("server")):
            await self.app(scope, receive, send)
            return
        shown = host.strip()[:200]
        if shown not in self._logged and len(self._logged) < _LOGGED_LIMIT:
            self._logged.add(shown)
            logger.warning("request refused by the DNS-rebinding guard",
                           extra={"status": 421, "refused": shown, "setting": SETTING})
        await send_error(send, Forbidden(
            f"this server does not answer for the host {shown!r}",
            remedy=f"If {shown!r} is this server's public name, set {SETTING} to it and "
                   "restart memhub.",
            host=shown,
        ), status=421)
