"""memhub-admin as an operator runs it: a separate process, finding the database through
DATABASE_URL, with --json output and confirmation for destructive commands."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.support import db

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("memhub-admin")


def cli(dsn: str, *args: str, stdin: str | None = None, script: bool = False, **env_extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["DATABASE_URL"] = dsn
    env.update(env_extra)
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "memhub.admin.cli"]
    return subprocess.run(
        [*command, *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok_json(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def active_token_ids(dsn: str, surface: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id FROM api_tokens WHERE surface = %s AND revoked_at IS NULL ORDER BY id",
            [surface],
        ).fetchall()
    return [r[0] for r in rows]


def test_token_create_json_prints_an_id_and_a_token_that_is_stored_only_as_a_hash(db_dsn):
    out = ok_json(
        cli(db_dsn, "token", "create", "--surface", "cursor", "--namespace", "acme",
            "--namespace", "beta", "--read-only", "--json", script=True)
    )
    assert isinstance(out["id"], int) and out["token"].startswith("mh_")
    assert out["namespaces"] == ["acme", "beta"] and out["read_only"] is True
    with psycopg.connect(db_dsn) as conn:
        stored = conn.execute(
            "SELECT token_hash, kind FROM api_tokens WHERE id = %s", [out["id"]]
        ).fetchone()
        dump = conn.execute("SELECT json_agg(t)::text FROM api_tokens t").fetchone()[0]
    assert bytes(stored[0]) == hashlib.sha256(out["token"].encode()).digest()
    assert stored[1] == "scoped" and out["token"] not in dump


def test_json_may_come_before_the_subcommand(db_dsn):
    out = ok_json(cli(db_dsn, "--json", "token", "create", "--surface", "web"))
    assert out["namespaces"] is None and out["read_only"] is False


@pytest.mark.parametrize("names", [[""], ["   "], ["acme", ""]],
                         ids=["empty", "blank", "a-blank-among-names"])
def test_token_create_refuses_an_empty_namespace_instead_of_scoping_to_every_one(db_dsn, names):
    """`--namespace "$NS"` with NS unset minted a token on every namespace, reported as
    scoped. Omitting --namespace stays the (documented) way to an unscoped token."""
    args = [a for n in names for a in ("--namespace", n)]
    result = cli(db_dsn, "token", "create", "--surface", "cursor", *args, "--json")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"
    assert "--namespace" in result.stderr
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM api_tokens WHERE kind = 'scoped'"
                            ).fetchone() == (0,)


def test_token_list_shows_active_tokens_without_secrets(db_dsn):
    created = ok_json(cli(db_dsn, "token", "create", "--surface", "web", "--json"))
    listed = ok_json(cli(db_dsn, "token", "list", "--json"))
    assert [t["id"] for t in listed] == [created["id"]]
    assert "token" not in listed[0] and "token_hash" not in listed[0]


def test_rotate_without_yes_and_without_stdin_refuses_and_changes_nothing(db_dsn):
    before = ok_json(cli(db_dsn, "token", "rotate", "cursor", "--yes", "--json"))["id"]
    result = cli(db_dsn, "token", "rotate", "cursor")
    assert result.returncode == 2
    assert "--yes" in result.stderr
    assert active_token_ids(db_dsn, "cursor") == [before]


def test_rotate_asks_and_honours_the_answer(db_dsn):
    first = ok_json(cli(db_dsn, "token", "rotate", "web", "--yes", "--json"))["id"]
    declined = cli(db_dsn, "token", "rotate", "web", stdin="n\n")
    assert declined.returncode == 3 and active_token_ids(db_dsn, "web") == [first]
    accepted = cli(db_dsn, "token", "rotate", "web", "--json", stdin="y\n")
    new = ok_json(accepted)
    assert active_token_ids(db_dsn, "web") == [new["id"]] and new["replaces"] == first


def test_revoke_needs_confirmation_then_revokes(db_dsn):
    created = ok_json(cli(db_dsn, "token", "create", "--surface", "web", "--json"))
    refused = cli(db_dsn, "token", "revoke", str(created["id"]))
    assert refused.returncode == 2 and active_token_ids(db_dsn, "web") == [created["id"]]
    revoked = ok_json(cli(db_dsn, "token", "revoke", str(created["id"]), "--yes", "--json"))
    assert revoked["active"] is False and active_token_ids(db_dsn, "web") == []
    again = cli(db_dsn, "token", "revoke", str(created["id"]), "--yes", "--json")
    assert again.returncode == 1 and json.loads(again.stdout)["error"]["code"] == "CONFLICT"


def test_cli_actions_are_audited_as_the_os_user_and_shown_by_status(db_dsn):
    created = ok_json(cli(db_dsn, "token", "create", "--surface", "web", "--json"))
    ok_json(cli(db_dsn, "token", "rotate", "cursor", "--yes", "--json"))
    status = ok_json(cli(db_dsn, "status", "--json"))
    actions = [(a["action"], a["actor"], a["source"]) for a in status["recent_audit"]]
    actor = f"cli:{getpass.getuser()}"
    assert actions[:2] == [("token.rotate", actor, "local"), ("token.create", actor, "local")]
    assert created["token"] not in json.dumps(status)
    assert {t["surface"] for t in status["active_tokens"]} >= {"web", "cursor"}
    assert status["embedding_queue"] == {"pending": 0, "dead": 0}
    text = cli(db_dsn, "status")
    assert text.returncode == 0 and "token.rotate" in text.stdout


def test_bad_input_is_reported_with_its_code(db_dsn):
    result = cli(db_dsn, "token", "create", "--surface", "web", "--namespace", "Not Valid",
                 "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "INVALID_INPUT"


@pytest.fixture
def empty_dsn(admin_dsn):
    name = f"memhub_empty_{os.getpid()}_{id(object())}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield db.with_db(admin_dsn, name)
    finally:
        db.drop(admin_dsn, name)


def test_a_database_memhub_never_ran_on_is_refused_until_migrate_makes_it_one(empty_dsn):
    refused = cli(empty_dsn, "status", "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "NO_DATABASE"
    migrated = ok_json(cli(empty_dsn, "migrate", "--json"))
    assert "0004" in migrated["applied"]
    assert ok_json(cli(empty_dsn, "migrate", "--json"))["applied"] == []
    assert ok_json(cli(empty_dsn, "token", "list", "--json")) == []


def test_an_unreachable_database_url_is_one_plain_error_with_a_remedy():
    from tests.support.server import free_port

    result = cli(f"postgresql://memhub:s3cret-pw@127.0.0.1:{free_port()}/memhub",
                 "--json", "status")
    assert result.returncode == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "UNAVAILABLE"
    assert "Traceback" not in result.stderr and "s3cret-pw" not in result.stdout + result.stderr


def test_a_database_behind_on_its_migrations_is_refused_until_migrate_runs(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = "
                     "(SELECT max(version) FROM schema_migrations)")
    refused = cli(db_dsn, "token", "list", "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "NOT_MIGRATED"


def cli_at(data_dir: Path, *args: str):
    """memhub-admin on the embedded cluster in `data_dir` (no DATABASE_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.pop("DATABASE_URL", None)
    env["MEMHUB_DATA_DIR"] = str(data_dir)
    return subprocess.run([str(CONSOLE_SCRIPT), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300)


@pytest.mark.parametrize("command", [["status"], ["token", "list"], ["gc", "--dry-run"],
                                     ["export", "acme"]])
def test_a_data_directory_without_a_database_is_refused_and_left_as_it_was(tmp_path, command):
    """A mistyped MEMHUB_DATA_DIR created an empty cluster there, then asked for `migrate`."""
    mistyped = tmp_path / "memhbu"
    refused = cli_at(mistyped, *command, "--json")
    assert refused.returncode == 1, refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "NO_DATABASE"
    assert not mistyped.exists()


@pytest.mark.slow
def test_migrate_creates_the_database_in_a_new_data_directory(tmp_path):
    data_dir = tmp_path / "new"
    applied = ok_json(cli_at(data_dir, "migrate", "--json"))["applied"]
    assert applied[0].startswith("0001")
    assert ok_json(cli_at(data_dir, "token", "list", "--json")) == []


def test_backfill_without_a_model_says_how_to_get_one_and_fetches_nothing(db_dsn, tmp_path):
    result = cli(db_dsn, "backfill", "--json", MEMHUB_DATA_DIR=str(tmp_path),
                 MEMHUB_EMBED_OFFLINE="0", HF_HUB_OFFLINE="0",
                 HF_ENDPOINT="http://127.0.0.1:9")  # a fetch tried would make models/
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "MODEL_ABSENT"
    assert not (tmp_path / "models").exists()
