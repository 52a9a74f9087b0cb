"""memhub-admin export / import as an operator runs them: separate processes finding the
database through DATABASE_URL, --json answers with stable codes, a progress bar only on a
terminal, and markdown notes seeded through the normal write path."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import psycopg
import pytest

from tests.support.transfer import fresh_database, populate, rewrite

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "tests" / "data" / "markdown"


def cli(dsn: str, *args: str, stderr=subprocess.PIPE, cwd: Path = ROOT,
        answer: str | None = None):
    """memhub-admin in a process of its own; `answer` is what the operator types, if anyone
    is there to ask (otherwise its input is empty)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["DATABASE_URL"] = dsn
    given = {"input": answer} if answer is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run([sys.executable, "-m", "memhub.admin.cli", *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=120,
                          **given)


def ok_json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def other_db(admin_dsn, template_db):
    with fresh_database(admin_dsn, template_db) as dsn:
        yield dsn


async def test_export_then_import_elsewhere_then_export_gives_the_same_file(
        db_dsn, other_db, tmp_path):
    await populate(db_dsn, tmp_path)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    exported = cli(db_dsn, "export", "acme", "--out", str(first), "--json")
    assert ok_json(exported)["counts"]["memory"] == 5
    assert "exporting" not in exported.stderr  # no terminal, no progress bar
    imported = ok_json(cli(other_db, "import", str(first), "--yes", "--json"))
    assert imported["created"]["session_event"] == 3 and imported["embeddings_queued"] == 3
    ok_json(cli(other_db, "export", "acme", "--out", str(second), "--json"))
    assert first.read_bytes() == second.read_bytes()
    refused = cli(db_dsn, "export", "acme", "--out", str(first), "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "CONFLICT"


async def test_a_newer_file_exits_1_with_unsupported_format_and_writes_nothing(
        db_dsn, other_db, tmp_path):
    await populate(db_dsn, tmp_path)
    path, newer = tmp_path / "a.jsonl", tmp_path / "newer.jsonl"
    ok_json(cli(db_dsn, "export", "acme", "--out", str(path), "--json"))
    rewrite(path, newer, lambda r: {**r, "version": 99} if r["record"] == "header" else r)
    result = cli(other_db, "import", str(newer), "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "UNSUPPORTED_FORMAT"
    assert "version 99" in result.stderr
    with psycopg.connect(other_db) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def memories_in(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('memhub.namespaces', '*', false)")
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]


async def test_an_import_into_the_files_namespace_with_nobody_to_ask_is_refused_with_exit_2(
        db_dsn, other_db, tmp_path):
    await populate(db_dsn, tmp_path)
    path = tmp_path / "a.jsonl"
    ok_json(cli(db_dsn, "export", "acme", "--out", str(path), "--json"))
    result = cli(other_db, "import", str(path), "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "CONFIRMATION_REQUIRED"
    assert "'acme'" in result.stderr and "--yes" in result.stderr
    assert memories_in(other_db) == 0


async def test_an_import_names_the_files_namespace_and_writes_only_when_the_operator_agrees(
        db_dsn, other_db, tmp_path):
    await populate(db_dsn, tmp_path)
    path = tmp_path / "a.jsonl"
    ok_json(cli(db_dsn, "export", "acme", "--out", str(path), "--json"))
    declined = cli(other_db, "import", str(path), answer="n\n")
    assert declined.returncode == 3 and "into namespace 'acme'" in declined.stderr
    assert memories_in(other_db) == 0
    agreed = cli(other_db, "import", str(path), answer="y\n")
    assert agreed.returncode == 0, agreed.stderr
    assert "into namespace 'acme'" in agreed.stderr
    assert memories_in(other_db) == 5


async def test_an_import_naming_its_namespace_asks_nothing(db_dsn, other_db, tmp_path):
    await populate(db_dsn, tmp_path)
    path = tmp_path / "a.jsonl"
    ok_json(cli(db_dsn, "export", "acme", "--out", str(path), "--json"))
    result = ok_json(cli(other_db, "import", str(path), "--namespace", "acme", "--json"))
    assert result["namespace"] == "acme" and result["created"]["memory"] == 5


async def test_a_terminal_gets_a_progress_bar(db_dsn, tmp_path):
    await populate(db_dsn, tmp_path)
    leader, follower = pty.openpty()
    # A terminal of 24 lines of 80 columns (a new pseudo-terminal has none, and tqdm
    # draws nothing in zero columns).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        result = cli(db_dsn, "export", "acme", "--out", str(tmp_path / "a.jsonl"),
                     stderr=follower)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert result.returncode == 0
    assert b"exporting" in shown and b"record" in shown


FILES = ["CLAUDE.md", "AGENTS.md", ".cursorrules", "adr/0001-use-postgres.md"]


def test_markdown_notes_seed_a_namespace_once_with_duplicates_folded(db_dsn):
    first = ok_json(cli(db_dsn, "import", "--markdown", *FILES, "--namespace", "notes",
                        "--json", cwd=NOTES))
    outcomes = [r["outcome"] for r in first]
    assert outcomes.count("created") == len(first) - 1
    [duplicate] = [r for r in first if r["outcome"] == "deduplicated"]
    assert duplicate["source"] == "AGENTS.md" and duplicate["content"] == "Never log card numbers."
    with psycopg.connect(db_dsn) as conn:
        stored = conn.execute("SELECT kind, author_client, metadata->>'source' FROM memories"
                              " WHERE namespace = 'notes' ORDER BY seq").fetchall()
        assert len(stored) == len(first) - 1
        assert {k for k, _, _ in stored} == {"NOTE", "CONVENTION", "FACT", "TODO", "DECISION"}
        assert {a for _, a, _ in stored} == {"markdown-import"}
        again = ok_json(cli(db_dsn, "import", "--markdown", *FILES, "--namespace", "notes",
                            "--json", cwd=NOTES))
        assert {r["outcome"] for r in again} == {"replayed"}
        assert conn.execute("SELECT count(*) FROM memories WHERE namespace = 'notes'"
                            ).fetchone() == (len(stored),)


def test_markdown_without_a_namespace_is_a_usage_error(db_dsn):
    result = cli(db_dsn, "import", "--markdown", "CLAUDE.md", "--json", cwd=NOTES)
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"


def test_a_dry_run_states_each_kind_and_writes_nothing(db_dsn):
    result = cli(db_dsn, "import", "--markdown", "CLAUDE.md", "--namespace", "notes",
                 "--dry-run", cwd=NOTES)
    assert result.returncode == 0, result.stderr
    assert 'CONVENTION CLAUDE.md:11  Never log card numbers.  (says "never")' in result.stdout
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
