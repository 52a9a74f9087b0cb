#!/usr/bin/env python3
"""What `tools/list` costs a client's context, per tool profile (tools/tool_profiles.py).

    .venv/bin/python -m bench.tool_list_size [--out PATH]

One fresh memhub (its own process on embedded PostgreSQL, bench/common.py) and two tokens of
the same surface, one `core` and one `full`. For each, a plain MCP exchange over HTTP
(initialize, tools/list) and the size of what came back: the JSON-RPC message as sent (bytes),
and its `tools` array as compact JSON (bytes, and tokens counted with the cl100k BPE memhub's
context packing counts with, storage/context_pack.count_tokens). A client pays the tool
definitions on every turn; how it renders them into its prompt varies, so the tokens of the
JSON are the comparable figure, not an exact bill.
"""

from __future__ import annotations

import argparse
import json
import secrets

import httpx
import psycopg

from bench.common import default_out, local_memhub, machine, provenance, write_result
from memhub.storage.context_pack import ENCODING, count_tokens
from memhub.storage.postgres.operator.tokens import hash_token, token_prefix
from memhub.storage.principal import TOOL_PROFILES

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def make_token(dsn: str, profile: str) -> str:
    token = "mh_bench_" + secrets.token_hex(16)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO api_tokens (surface, kind, token_hash, prefix, tool_profile)"
                     " VALUES ('cursor', 'scoped', %s, %s, %s)",
                     [hash_token(token), token_prefix(token), profile])
    return token


def message_of(response: httpx.Response) -> bytes:
    """The JSON-RPC message of a response, JSON or a one-event SSE stream."""
    response.raise_for_status()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines()
                if line.startswith("data:")]
        return data[-1].encode()
    return response.content


def list_tools(base: str, token: str) -> bytes:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=60) as http:
        init = http.post(f"{base}/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench-tool-list", "version": "1"}}})
        message_of(init)
        session = init.headers.get("mcp-session-id")
        if session:
            headers["mcp-session-id"] = session
        http.post(f"{base}/mcp", headers=headers,
                  json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        return message_of(http.post(f"{base}/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))


def measure() -> dict[str, object]:
    profiles = {}
    with local_memhub(embed_worker=False) as (base, _settings, dsn):
        for profile in TOOL_PROFILES:
            raw = list_tools(base, make_token(dsn, profile))
            tools = json.loads(raw)["result"]["tools"]
            compact = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
            profiles[profile] = {
                "tools": len(tools), "names": [t["name"] for t in tools],
                "message_bytes": len(raw), "tools_json_bytes": len(compact.encode()),
                "tools_json_tokens": count_tokens(compact),
            }
            print(profile, {k: v for k, v in profiles[profile].items() if k != "names"},
                  flush=True)
    full, core = profiles["full"], profiles["core"]
    return {"machine": machine(), **provenance(), "encoding": ENCODING,
            "profiles": profiles,
            "core_share_of_full_tokens": round(core["tools_json_tokens"]
                                               / full["tools_json_tokens"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    path = write_result(args.out or default_out("tool-list-size"), measure())
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
