"""A real server process's log never contains a token, however the token was sent."""

import httpx

from tests.conftest import WEB_TOKEN
from tests.support.server import process_server


async def test_server_logs_are_json_lines_without_any_token(db_dsn):
    env = {"DATABASE_URL": db_dsn, "MCP_AUTH_TOKEN": WEB_TOKEN, "MEMHUB_LOG_LEVEL": "DEBUG"}
    with process_server(env) as (running, _):
        async with running.client(WEB_TOKEN, via="query") as client:
            await client.call_tool("stats", {})
        async with running.client(WEB_TOKEN, via="header") as client:
            await client.call_tool("stats", {})
        httpx.post(f"{running.mcp_url}?token=mh_wrong_but_secret_value", json={})
    log = running.log_path.read_text()
    assert "token=[REDACTED]" in log
    assert WEB_TOKEN not in log
    assert "mh_wrong_but_secret_value" not in log
    import json

    for line in log.splitlines():
        if line.startswith("{"):
            json.loads(line)
