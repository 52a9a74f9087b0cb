"""`memhub-admin smoke` as an operator schedules it: a separate process, a real MCP client
against a real running server, one JSON report, the exit status, and what it leaves behind
(admin/smoke.py, docs/operations.md, The smoke check)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.conftest import WEB_TOKEN
from tests.support.db import insert_token
from tests.support.mcp import call

ROOT = Path(__file__).resolve().parents[2]
NS = "memhub-smoke"
STEPS = ["healthz", "unauthenticated", "tools_list", "token_in_query", "bootstrap",
         "remember", "search", "revise", "supersede", "recall", "handoff_save",
         "handoff_load", "changes", "forget", "retire"]


def smoke(*args: str, dsn: str | None = None, **env_extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.pop("DATABASE_URL", None)
    if dsn is not None:
        env["DATABASE_URL"] = dsn
    env.update(env_extra)
    result = subprocess.run([sys.executable, "-m", "memhub.admin.cli", "smoke", *args],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL)
    report = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result, report


def token_file(tmp_path: Path, token: str) -> str:
    path = tmp_path / "smoke-token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


def statuses(report: dict) -> dict[str, str]:
    return {s["step"]: s["status"] for s in report["steps"]}


def rows(dsn: str, sql: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        return conn.execute(sql, [NS]).fetchall()


def test_the_smoke_passes_against_a_running_server_and_purges_its_namespace(
        server, db_dsn, tmp_path):
    token = insert_token(db_dsn, "smoke", namespaces=[NS])
    result, report = smoke("--url", server.base_url + "/mcp/", "--token-file",
                           token_file(tmp_path, token), "--purge", dsn=db_dsn)

    assert result.returncode == 0, result.stdout + result.stderr
    assert report["ok"] is True and report["failed"] == []
    assert statuses(report) == {**dict.fromkeys(STEPS, "ok"), "purge": "ok"}
    assert [s["step"] for s in report["steps"]] == [*STEPS, "purge"]
    assert report["url"] == server.base_url and report["profile"] == "full"
    assert token not in result.stdout + result.stderr
    purge = report["steps"][-1]
    assert purge["tombstone_id"] and purge["removed"]["memories"] == 2
    assert rows(db_dsn, "SELECT count(*) FROM memories WHERE namespace = %s") == [(0,)]
    assert rows(db_dsn, "SELECT count(*) FROM handoffs WHERE namespace = %s") == [(0,)]


async def test_without_purge_it_retires_what_it_wrote_and_says_what_is_left(
        server, db_dsn):
    token = insert_token(db_dsn, "smoke", namespaces=[NS])
    async with server.client(WEB_TOKEN) as web:  # previews are confirmed as a client does
        await call(web, "namespace_init", {"namespace": NS,
                                           "profile": {"intent_gate": "on"}})
    result, report = smoke("--url", server.base_url, MEMHUB_SMOKE_TOKEN=token)

    assert result.returncode == 0, result.stdout + result.stderr
    assert set(statuses(report).values()) == {"ok"} and "purge" not in statuses(report)
    steps = {s["step"]: s for s in report["steps"]}
    assert steps["supersede"]["gate"] == steps["forget"]["gate"] == "confirmed"
    assert f"memhub-admin purge namespace {NS}" in report["left"]
    assert sorted(rows(db_dsn, "SELECT status FROM memories WHERE namespace = %s")) == [
        ("DELETED",), ("SUPERSEDED",)]
    assert rows(db_dsn, "SELECT status FROM handoffs WHERE namespace = %s") == [("taken",)]
    assert rows(db_dsn, "SELECT status FROM sessions WHERE namespace = %s") == [("closed",)]
    # A second run beside the first's leftovers passes too.
    again, second = smoke("--url", server.base_url, MEMHUB_SMOKE_TOKEN=token)
    assert again.returncode == 0, again.stdout and second["run"] != report["run"]


def test_a_tool_missing_from_the_tokens_list_fails_the_smoke_and_names_the_step(
        server, db_dsn, tmp_path):
    core = insert_token(db_dsn, "smoke", namespaces=[NS], tool_profile="core")
    result, report = smoke("--url", server.base_url, "--token-file",
                           token_file(tmp_path, core))

    assert result.returncode == 1
    assert report["ok"] is False and "tools_list" in report["failed"]
    listed = next(s for s in report["steps"] if s["step"] == "tools_list")
    assert {"memory_search", "memory_changes", "session_close"} <= set(listed["missing"])
    assert listed["unexpected"] == []
    assert core not in result.stdout + result.stderr


def test_a_core_token_passes_as_core_skipping_the_steps_core_has_no_tool_for(
        server, db_dsn, tmp_path):
    core = insert_token(db_dsn, "smoke", namespaces=[NS], tool_profile="core")
    result, report = smoke("--url", server.base_url, "--token-file",
                           token_file(tmp_path, core), "--profile", "core")

    assert result.returncode == 0, result.stdout + result.stderr
    seen = statuses(report)
    assert seen["search"] == seen["changes"] == "skipped"
    assert {s for s, status in seen.items() if status != "skipped"} == \
        set(STEPS) - {"search", "changes"}
    assert set(seen.values()) == {"ok", "skipped"}


def test_a_wrong_token_fails_without_appearing_in_the_report(server):
    wrong = "mh_" + "w" * 43
    result, report = smoke("--url", server.base_url, "--token", wrong)

    assert result.returncode == 1
    assert {"tools_list", "token_in_query"} <= set(report["failed"])
    assert statuses(report)["bootstrap"] == "skipped"
    assert wrong not in result.stdout + result.stderr


@pytest.mark.parametrize("args", [
    ["--url", "http://127.0.0.1:9"],  # no token anywhere
    ["--url", "ftp://example.com", "--token", "t" * 20],
    ["--url", "http://127.0.0.1:9", "--token", "t" * 20, "--namespace", "acme", "--purge"],
], ids=["no-token", "not-http", "purge-a-project"])
def test_usage_errors_exit_2_before_anything_is_sent(args):
    result, _ = smoke(*args)
    assert result.returncode == 2, result.stdout + result.stderr
