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


def _log_records(log: str) -> list[dict]:
    """The JSON records of a server log; any other line, except the console announcement of
    generated tokens (app.announce_tokens), fails the test: the log is one JSON object per
    line, whichever library wrote the record."""
    import json

    records = []
    for line in log.splitlines():
        if not line.strip() or line.startswith("memhub: "):
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON record: {line[:200]!r}") from None
    return records


async def test_callers_errors_are_answered_not_logged_as_errors_and_the_log_stays_json(db_dsn):
    env = {"DATABASE_URL": db_dsn, "MCP_AUTH_TOKEN": WEB_TOKEN, "MEMHUB_LOG_LEVEL": "INFO"}
    with process_server(env) as (running, _):
        async with running.client(WEB_TOKEN) as client:
            for tool, args in [
                ("handoff_load", {"namespace": "acme"}),  # nothing to take: NOT_FOUND
                ("memory_get", {"namespace": "acme",
                                "memory_id": "00000000-0000-4000-8000-000000000000"}),
                ("memory_search", {"namespace": "acme", "query": ""}),  # INVALID_INPUT
                ("memory_search", {"namespace": "acme", "query": "x", "limit": "many"}),
                ("memory_serch", {"namespace": "acme", "query": "x"}),  # no such tool
            ]:
                result = await client.call_tool(tool, args, raise_on_error=False)
                assert result.is_error
    records = _log_records(running.log_path.read_text())
    # No model here (process_server drops MEMHUB_*): fastembed reports that at ERROR, through
    # loguru, now as a JSON record like the rest. The tools' refusals are no errors of ours.
    ours = [r for r in records if not r["logger"].startswith("fastembed")]
    assert [r for r in ours if r["level"] in ("ERROR", "CRITICAL") or "exc" in r] == []
    # fastmcp's record of the schema refusal of `limit` is DEBUG, not shown at INFO (its JSON
    # form at DEBUG: tests/e2e/test_gateway_attacks.py)
    assert [r for r in records if r["logger"].startswith("fastmcp")
            and r["level"] not in ("DEBUG", "INFO")] == []
