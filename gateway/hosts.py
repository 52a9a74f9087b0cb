"""The Host names this server answers to (DNS-rebinding protection)."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..config import Settings


def allowed_hosts(settings: Settings) -> list[str]:
    """Loopback, the bind address, MEMHUB_PUBLIC_URL's host and MEMHUB_ALLOWED_HOSTS, each bare
    and with any port."""
    hosts = ["localhost", "127.0.0.1", "[::1]", settings.host]
    if settings.public_url:
        hosts.append(urlsplit(settings.public_url).netloc)
    hosts.extend(settings.allowed_hosts)
    out: list[str] = []
    for host in hosts:
        out.append(host)
        if ":" not in host.strip("[]") or host.startswith("["):
            out.append(f"{host}:*")
    return sorted(set(out))
