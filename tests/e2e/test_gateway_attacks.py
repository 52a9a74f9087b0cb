"""Attacks on the HTTP gateway, found by attack and fault testing, kept as tests: a token
smuggled past the log's redaction, artifacts the transport could not carry, requests the MCP
layer answered with silence or plain text, bad tokens flooding the database, refused calls
logged as warnings."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from urllib.parse import quote

import httpx
import psycopg
import pytest

from tests.conftest import MODEL_PATH, WEB_TOKEN, make_settings
from tests.support.db import insert_token
from tests.support.mcp import call, error_of
from tests.support.server import process_server, thread_server

NS = "acme"
ACCEPT = {"accept": "application/json, text/event-stream"}
# MCP_AUTH_TOKEN may be any string: one that no `mh_` pattern of the redaction would catch.
PLAIN_WEB_TOKEN = "Plain-Web-Secret-7f3a9c21e5d84b06"


def _tools_list(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, headers={**ACCEPT, **headers},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def _spelled(token: str) -> dict[str, str]:
    """Query strings that carry `token` under a name or in a form other than plain
    `token=<token>`: each one decodes to a token parameter somewhere."""
    every_char = "".join(f"%{ord(c):02X}" for c in token)
    return {
        "name %74oken": f"%74oken={token}",
        "name t%6Fken": f"t%6Fken={token}",
        "name TOKEN": f"TOKEN={token}",
        "name to%6Ben+": f"x=1&to%6Ben+={token}",
        "name after ;": f"x=1;token={token}",
        "value percent-encoded": f"%74oken={every_char}",
    }


async def test_a_token_under_a_percent_encoded_name_neither_authenticates_nor_reaches_the_log(
    db_dsn,
):
    scoped = insert_token(db_dsn, "cursor")
    env = {"DATABASE_URL": db_dsn, "MCP_AUTH_TOKEN": PLAIN_WEB_TOKEN, "MEMHUB_LOG_LEVEL": "DEBUG"}
    with process_server(env) as (running, _):
        refused = {}
        for token in (PLAIN_WEB_TOKEN, scoped):
            for label, query in _spelled(token).items():
                refused[(token, label)] = _tools_list(f"{running.mcp_url}?{query}").status_code
        # The plain name with the value percent-encoded, character by character, still works.
        every_char = "".join(f"%{ord(c):02X}" for c in PLAIN_WEB_TOKEN)
        plain = _tools_list(f"{running.mcp_url}?a=1&token={every_char}")
        header = _tools_list(running.mcp_url, authorization=f"Bearer {PLAIN_WEB_TOKEN}")
    assert set(refused.values()) == {401}, refused
    assert plain.status_code == header.status_code == 200
    log = running.log_path.read_text()
    for token in (PLAIN_WEB_TOKEN, scoped):
        for form in (token, quote(token, safe=""), token.replace("_", "%5F"),
                     "".join(f"%{ord(c):02X}" for c in token)):
            assert form not in log
    assert "%74oken=[REDACTED]" in log and "token=[REDACTED]" in log


@pytest.fixture
def big_server(db_dsn, tmp_path):
    """A server with the default artifact cap (50 MiB) and no embedding work to compete."""
    settings = make_settings(db_dsn, tmp_path, embed_worker=False, query_prefetch=False)
    with thread_server(settings) as running:
        yield running


async def test_an_artifact_of_the_full_cap_round_trips_through_mcp_and_one_byte_more_is_refused(
    big_server,
):
    cap = big_server.settings.artifact_max_bytes
    assert cap == 50 * 1024 * 1024  # the documented default
    data = os.urandom(cap)
    async with big_server.client(WEB_TOKEN) as web:
        put = await call(web, "artifact_put", {"namespace": NS, "name": "dump.bin",
                                               "content_base64": base64.b64encode(data).decode()})
        assert put["artifact"]["size"] == cap
        got = hashlib.sha256()
        offset = 0
        while True:
            part = await call(web, "artifact_get", {"namespace": NS, "sha256":
                                                    put["artifact"]["sha256"],
                                                    "offset": offset})
            got.update(base64.b64decode(part["content_base64"]))
            offset += part["length"]
            if part["eof"]:
                break
        over = await error_of(web, "artifact_put", {
            "namespace": NS, "name": "over.bin",
            "content_base64": base64.b64encode(data + b"x").decode()})
    assert got.hexdigest() == hashlib.sha256(data).hexdigest() == put["artifact"]["sha256"]
    assert over["code"] == "TOO_LARGE" and over["details"]["max_bytes"] == cap


def test_a_body_over_the_transport_bound_is_refused_as_json_too_large(big_server):
    """Past the bound for a full-cap artifact, memhub's limit answers, never the SDK's text."""
    headers = {**ACCEPT, "authorization": f"Bearer {WEB_TOKEN}",
               "content-type": "application/json"}
    from memhub.gateway.body_limit import mcp_body_limit

    bound = mcp_body_limit(big_server.settings.artifact_max_bytes)
    answer = httpx.post(big_server.mcp_url, headers=headers,
                        content=b"{" + b" " * bound + b"}", timeout=60)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "TOO_LARGE"


def test_a_chunked_body_over_the_transport_bound_is_refused_as_json_too_large(db_dsn, tmp_path):
    """No Content-Length to refuse on: memhub's limit counts the body as it streams, and is the
    only limit left on /mcp (the SDK's is taken out of the path)."""
    settings = make_settings(db_dsn, tmp_path, embed_worker=False, query_prefetch=False,
                             artifact_max_bytes=1024 * 1024)
    from memhub.gateway.body_limit import mcp_body_limit

    bound = mcp_body_limit(settings.artifact_max_bytes)

    def body():
        yield b"{"
        for _ in range(bound // 65536 + 1):
            yield b" " * 65536
        yield b"}"

    headers = {**ACCEPT, "authorization": f"Bearer {WEB_TOKEN}",
               "content-type": "application/json"}
    with thread_server(settings) as running:
        answer = httpx.post(running.mcp_url, headers=headers, content=body(), timeout=60)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "TOO_LARGE"


def _post(server, body: bytes | str, *, token: str = WEB_TOKEN,
          content_type: str | None = "application/json") -> httpx.Response:
    headers = {**ACCEPT, "authorization": f"Bearer {token}"}
    if content_type is not None:
        headers["content-type"] = content_type
    return httpx.post(server.mcp_url, headers=headers, content=body)


@pytest.mark.parametrize("request_id", [None, 1.5, 1.0, {"a": 1}, [1], True])
def test_a_request_whose_id_is_not_a_string_or_integer_is_answered_invalid_request(
    server, request_id
):
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    answer = _post(server, body)
    assert answer.status_code == 400
    error = answer.json()
    assert error["jsonrpc"] == "2.0" and error["id"] is None
    assert error["error"]["code"] == -32600
    assert error["error"]["data"]["code"] == "INVALID_INPUT"


@pytest.mark.parametrize("request_id", ["req-7", 7, 0, -3])
def test_a_request_with_a_string_or_integer_id_is_answered_with_that_id(server, request_id):
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    answer = _post(server, body)
    assert answer.status_code == 200 and answer.json()["id"] == request_id


def test_a_notification_is_still_accepted_without_an_answer(server):
    answer = _post(server, json.dumps({"jsonrpc": "2.0",
                                       "method": "notifications/initialized"}))
    assert answer.status_code == 202 and answer.content == b""


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_post_that_is_not_json_is_refused_with_a_json_error(server, content_type):
    answer = _post(server, '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                   content_type=content_type)
    assert answer.status_code == 415
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == "INVALID_INPUT"


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'"a string"',
                                  b'{"jsonrpc": "2.0", "id": 1}'])
def test_a_malformed_message_is_refused_with_a_json_rpc_error(server, body):
    answer = _post(server, body)
    assert 400 <= answer.status_code < 500
    assert answer.json()["error"]["code"] in (-32700, -32600, -32602)


def test_a_message_nested_past_the_parser_is_a_json_rpc_error_not_a_server_error(server):
    # Small enough for every middleware that reads the body (the search prefetch reads 16 KiB),
    # deep enough that Python's own parser would give up with a RecursionError.
    deep = "[" * 5000 + "]" * 5000
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
            '"memory_search", "arguments": {"namespace": "acme", "query": "redis", "deep": '
            + deep + "}}}")
    answer = _post(server, body)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32700


def test_an_unauthenticated_request_is_refused_before_its_body_is_judged(server):
    answer = _post(server, b"{not json", token="mh_" + "x" * 43, content_type="text/plain")
    assert answer.status_code == 401


# Calls a fuzzer sends: wrong types, missing and unknown arguments, values the tools refuse,
# tools that do not exist.
INVALID_CALLS = [
    ("memory_search", {"namespace": NS, "query": "x", "limit": "many"}),
    ("memory_search", {"namespace": NS, "query": ""}),
    ("memory_search", {"namespace": NS, "query": None}),
    ("memory_remember", {"namespace": NS}),
    ("memory_remember", {"namespace": NS, "content": 5, "kind": []}),
    ("memory_remember", {"namespace": "", "content": "x"}),
    ("memory_get", {"namespace": NS, "memory_id": "not-a-uuid"}),
    ("memory_get", {"namespace": NS, "memory_id": {"$ne": None}}),
    ("artifact_get", {"namespace": NS, "sha256": "xyz", "offset": -1}),
    ("artifact_put", {"namespace": NS, "name": "f", "content_base64": "!!"}),
    ("handoff_load", {"namespace": NS}),
    ("memory_serch", {"namespace": NS, "query": "x"}),
    ("stats", {"unexpected": True}),
]


async def test_refused_calls_are_answers_and_leave_no_warning_in_the_log(db_dsn):
    env = {"DATABASE_URL": db_dsn, "MCP_AUTH_TOKEN": WEB_TOKEN, "MEMHUB_LOG_LEVEL": "DEBUG"}
    if MODEL_PATH:
        env["MEMHUB_EMBED_MODEL_PATH"] = MODEL_PATH
    with process_server(env) as (running, _):
        async with running.client(WEB_TOKEN) as client:
            started = len(running.log_path.read_text().splitlines())
            for tool, args in INVALID_CALLS:
                result = await client.call_tool(tool, args, raise_on_error=False)
                assert result.is_error, tool
    lines = running.log_path.read_text().splitlines()[started:]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert [r for r in records if r["level"] not in ("DEBUG", "INFO")] == []
    # fastmcp's record of a schema refusal is still there, as JSON, for whoever turns DEBUG on
    assert any(r["logger"].startswith("fastmcp") and r["level"] == "DEBUG"
               and r["msg"].startswith("Invalid arguments for tool") for r in records)


@pytest.fixture
def strict_server(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, auth_failure_limit=3,
                             auth_failure_window_seconds=600)
    with thread_server(settings) as running:
        yield running


def test_an_address_that_keeps_sending_bad_tokens_is_answered_429_and_good_tokens_still_work(
    strict_server, db_dsn
):
    url = strict_server.mcp_url
    good = insert_token(db_dsn, "cursor")
    assert _tools_list(url, authorization=f"Bearer {good}").status_code == 200
    refused = [_tools_list(url, authorization=f"Bearer mh_guess{i:040d}").status_code
               for i in range(3)]
    throttled = _tools_list(url, authorization="Bearer mh_" + "y" * 43)
    query_throttled = _tools_list(f"{url}?token=mh_{'z' * 43}")
    # A token that authenticated before is not throttled, and is still looked up: revoking
    # it stops it at once.
    assert _tools_list(url, authorization=f"Bearer {good}").status_code == 200
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE api_tokens SET revoked_at = now() WHERE token_hash = "
                     "sha256(convert_to(%s, 'UTF8'))", [good])
    revoked = _tools_list(url, authorization=f"Bearer {good}")
    assert refused == [401, 401, 401]
    assert throttled.status_code == query_throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "RATE_LIMITED"
    retry_after = int(throttled.headers["retry-after"])
    assert 1 <= retry_after <= 600
    assert throttled.json()["error"]["details"]["retry_after_seconds"] == retry_after
    assert revoked.status_code == 401


def test_a_request_without_a_token_is_not_counted_against_its_address(strict_server):
    url = strict_server.mcp_url
    assert {_tools_list(url).status_code for _ in range(6)} == {401}
    assert _tools_list(url, authorization=f"Bearer {WEB_TOKEN}").status_code == 200


def test_the_web_token_set_through_mcp_auth_token_may_be_any_string(db_dsn, tmp_path):
    settings = make_settings(db_dsn, tmp_path, mcp_auth_token="any string, even with spaces")
    with thread_server(settings) as running:
        header = _tools_list(running.mcp_url,
                             authorization="Bearer any string, even with spaces")
        query = _tools_list(f"{running.mcp_url}?token=any+string%2C+even+with+spaces")
        other = _tools_list(running.mcp_url, authorization="Bearer any string, even with")
    assert header.status_code == query.status_code == 200
    assert other.status_code == 401
