"""Secret settings: a blank one is no setting (a key, password or webhook secret of "" is one
anyone can reproduce), a session secret too short to be a key stops start-up, and the
message that says so names the variable, never its value."""

from __future__ import annotations

import pytest
import uvicorn
from pydantic import ValidationError

from memhub import app
from memhub.config import MIN_SESSION_SECRET_CHARS, Settings

SECRETS = ["MEMHUB_SESSION_SECRET", "ADMIN_PASSWORD", "MCP_AUTH_TOKEN",
           "MEMHUB_GITHUB_WEBHOOK_SECRET", "MEMHUB_METRICS_TOKEN", "MEMHUB_GITHUB_TOKEN",
           "MEMHUB_ANTHROPIC_API_KEY", "MEMHUB_DIRECT_DATABASE_URL"]


@pytest.mark.parametrize("variable", SECRETS)
@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_secret_in_the_environment_is_unset(monkeypatch, variable, blank):
    monkeypatch.setenv(variable, blank)
    settings = Settings()
    field = {"ADMIN_PASSWORD": "admin_password", "MCP_AUTH_TOKEN": "mcp_auth_token"}.get(
        variable, variable.removeprefix("MEMHUB_").lower())
    assert getattr(settings, field) is None


def test_a_blank_secret_given_in_code_is_unset():
    settings = Settings(session_secret="", admin_password=" ")
    assert settings.session_secret is None and settings.admin_password is None


@pytest.mark.parametrize("length", [1, MIN_SESSION_SECRET_CHARS - 1])
def test_a_session_secret_too_short_to_be_a_key_is_refused(length):
    with pytest.raises(ValidationError):
        Settings(session_secret="k" * length)


def test_a_session_secret_of_the_minimum_length_is_the_key():
    secret = "k" * MIN_SESSION_SECRET_CHARS
    assert Settings(session_secret=secret).session_secret.get_secret_value() == secret


def test_memhub_refuses_to_start_naming_the_short_secret_but_not_its_value(monkeypatch, capsys):
    value = "hunter2-is-too-short"
    monkeypatch.setenv("MEMHUB_SESSION_SECRET", value)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")

    def serve(*args, **kwargs):
        raise AssertionError("memhub started with a session secret too short to be a key")

    monkeypatch.setattr(uvicorn, "run", serve)
    with pytest.raises(SystemExit) as stopped:
        app.main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "MEMHUB_SESSION_SECRET" in err and str(MIN_SESSION_SECRET_CHARS) in err
    assert value not in err
