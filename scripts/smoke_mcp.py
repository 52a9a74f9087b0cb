#!/usr/bin/env python3
"""Do what a connector does, against a running memhub, and exit non-zero on any failure.

    python scripts/smoke_mcp.py BASE_URL TOKEN

Checks: /healthz answers ok; /mcp without a token is 401 with WWW-Authenticate; a real MCP
client completes `initialize` + `tools/list` with the token in the header and in `?token=`.
"""

from __future__ import annotations

import asyncio
import sys

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport


def _check(failures: list[str], ok: bool, label: str) -> None:
    print(("PASS " if ok else "FAIL ") + label)
    if not ok:
        failures.append(label)


async def smoke(base_url: str, token: str) -> list[str]:
    failures: list[str] = []
    base_url = base_url.rstrip("/")
    async with httpx.AsyncClient(timeout=15) as http:
        try:
            health = await http.get(f"{base_url}/healthz")
            _check(failures, health.status_code == 200 and health.json().get("db") == "ok",
                   f"/healthz ok ({health.status_code})")
        except httpx.HTTPError as exc:
            _check(failures, False, f"/healthz reachable ({type(exc).__name__})")
            return failures
        anon = await http.post(f"{base_url}/mcp", json={})
        _check(failures, anon.status_code == 401 and "www-authenticate" in anon.headers,
               f"/mcp without a token is 401 ({anon.status_code})")
    transports = {
        "header": StreamableHttpTransport(
            f"{base_url}/mcp", headers={"Authorization": f"Bearer {token}"}
        ),
        "query": StreamableHttpTransport(f"{base_url}/mcp?token={token}"),
    }
    for label, transport in transports.items():
        try:
            async with Client(transport, timeout=30) as client:
                tools = await client.list_tools()
            _check(failures, len(tools) > 0,
                   f"initialize + tools/list with the token in the {label} ({len(tools)} tools)")
        except Exception as exc:  # any failure of the handshake is a smoke failure
            _check(failures, False, f"initialize + tools/list via {label} ({type(exc).__name__})")
    return failures


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2]:
        print("usage: smoke_mcp.py BASE_URL TOKEN", file=sys.stderr)
        return 2
    failures = asyncio.run(smoke(argv[1], argv[2]))
    print(f"smoke: {'FAILED' if failures else 'ok'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
