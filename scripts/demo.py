"""The seed's workflow against a running memhub, printing the real tool responses.

    python scripts/demo.py BASE_URL TOKEN_A TOKEN_B [--namespace NS]

TOKEN_A plays Claude Desktop, TOKEN_B plays Cursor. Cursor's steps run in a separate OS
process (this script re-invoked with --as-cursor), sharing nothing with Claude Desktop's but
the server: the database is the only channel between them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import subprocess
import sys

from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

OLD = "The job queue runs on Redis"
NEW = ("The job queue runs on PostgreSQL (FOR UPDATE SKIP LOCKED); "
       "Redis was removed from the stack.")


def client(base_url: str, token: str) -> Client:
    transport = StreamableHttpTransport(
        f"{base_url.rstrip('/')}/mcp", headers={"Authorization": f"Bearer {token}"}
    )
    return Client(transport, timeout=60)


async def step(c: Client, who: str, tool: str, **args) -> dict:
    print(f"\n--- {who}: {tool}({json.dumps(args)})")
    result = (await c.call_tool(tool, args)).structured_content
    print(json.dumps(result, indent=2))
    return result


async def desktop_first(base_url: str, token: str, ns: str) -> str:
    async with client(base_url, token) as c:
        made = await step(c, "Claude Desktop", "memory_remember", namespace=ns,
                          kind="DECISION", key="job-queue", tags=["infra", "queue"],
                          content=OLD)
    return made["memory"]["id"]


async def cursor_steps(base_url: str, token: str, ns: str, old_id: str) -> None:
    async with client(base_url, token) as c:
        await step(c, "Cursor (separate process)", "memory_list", namespace=ns, kind="DECISION")
        await step(c, "Cursor", "memory_get", namespace=ns, key="job-queue")
        made = await step(c, "Cursor, months later", "memory_remember", namespace=ns,
                          kind="DECISION", key="job-queue", tags=["infra", "queue"],
                          content=NEW, supersedes=[old_id])
        # The retired memory names Redis outright; it still never comes back.
        found = await step(c, "Cursor", "memory_search", namespace=ns, query="redis")
        ids = [r["id"] for r in found["results"]]
        assert ids == [made["memory"]["id"]], "search returned something besides the replacement"


async def desktop_last(base_url: str, token: str, ns: str, old_id: str) -> None:
    async with client(base_url, token) as c:
        await step(c, "Claude Desktop", "memory_get", namespace=ns, id=old_id)
        await step(c, "Claude Desktop", "memory_history", namespace=ns, id=old_id)
        listed = await step(c, "Claude Desktop", "memory_list", namespace=ns)
    ids = [m["id"] for m in listed["memories"]]
    assert old_id not in ids, "a superseded memory was listed as current"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("token_a")
    parser.add_argument("token_b")
    parser.add_argument("--namespace", default=f"demo-{secrets.token_hex(3)}")
    parser.add_argument("--as-cursor", metavar="OLD_ID", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_cursor:
        asyncio.run(cursor_steps(args.base_url, args.token_b, args.namespace, args.as_cursor))
        return
    print(f"namespace: {args.namespace}")
    old_id = asyncio.run(desktop_first(args.base_url, args.token_a, args.namespace))
    subprocess.run(
        [sys.executable, __file__, args.base_url, args.token_a, args.token_b,
         "--namespace", args.namespace, "--as-cursor", old_id],
        check=True,
    )
    asyncio.run(desktop_last(args.base_url, args.token_a, args.namespace, old_id))
    print("\nThe replaced decision is SUPERSEDED, still in history, and no longer listed.")


if __name__ == "__main__":
    main()
