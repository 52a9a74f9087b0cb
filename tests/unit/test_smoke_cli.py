"""memhub-admin smoke's parts that need no server: which URL it talks to, where its token comes
from, that the token never survives into the report, and which tools it expects a profile to
list (admin/smoke.py)."""

from __future__ import annotations

import argparse

import pytest

from memhub.admin.smoke import TOKEN_FILE_MAX, base_url, expected_tools, read_token, redact
from memhub.config import Settings
from memhub.tools.tool_profiles import CORE_TOOLS
from tests.unit.test_documented import tool_names

TOKEN = "mh_smoke_token_0123456789abcdef"


@pytest.mark.parametrize("given, base", [
    ("https://memhub.example.com", "https://memhub.example.com"),
    ("https://memhub.example.com/", "https://memhub.example.com"),
    ("https://memhub.example.com/mcp", "https://memhub.example.com"),
    ("http://127.0.0.1:8000/mcp/", "http://127.0.0.1:8000"),
    ("https://example.com/memhub/mcp", "https://example.com/memhub"),
    ("ftp://memhub.example.com", None),
    ("memhub.example.com", None),
    ("https://memhub.example.com/mcp?token=" + TOKEN, None),
])
def test_the_url_is_the_servers_base_and_never_carries_a_query(given, base):
    assert base_url(given) == base


def test_nothing_the_report_holds_keeps_the_token():
    report = {"steps": [{"why": f"ConnectError: http://h/mcp?token={TOKEN}"},
                        {"missing": [f"x{TOKEN}y"], "n": 3}], "ok": False}
    cleaned = redact(report, TOKEN)
    assert TOKEN not in repr(cleaned)
    assert cleaned["steps"][0]["why"].endswith("?token=[redacted]")
    assert cleaned["steps"][1]["n"] == 3 and cleaned["ok"] is False


def args(**given) -> argparse.Namespace:
    return argparse.Namespace(**{"token": None, "token_file": None, **given})


def test_the_token_comes_from_the_file_then_the_option_then_the_environment(tmp_path):
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n")
    env = Settings(smoke_token="from-env-token")
    assert read_token(args(token_file=str(path)), env) == TOKEN
    assert read_token(args(token="given-token"), env) == "given-token"
    assert read_token(args(), env) == "from-env-token"
    assert read_token(args(), Settings()) is None
    assert read_token(args(token="   "), env) is None


def test_a_missing_empty_or_oversized_token_file_gives_no_token(tmp_path):
    empty, big = tmp_path / "empty", tmp_path / "big"
    empty.write_text("\n")
    big.write_text("x" * (TOKEN_FILE_MAX + 1))
    for path in (empty, big, tmp_path / "absent", tmp_path):
        assert read_token(args(token_file=str(path)), Settings(smoke_token=TOKEN)) is None


async def test_a_profile_expects_exactly_the_tools_the_server_lists_for_it():
    every = set(await tool_names())
    assert await expected_tools(Settings(), "full") == every
    assert await expected_tools(Settings(), "core") == CORE_TOOLS & every == CORE_TOOLS
