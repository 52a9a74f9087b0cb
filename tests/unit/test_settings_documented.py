"""Every setting must be documented in docs/settings.md, the settings reference the README links
(datasette's habit)."""

from pathlib import Path

from memhub.config import Settings

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def _env_name(name: str, field) -> str:
    alias = field.validation_alias
    if alias is not None:
        return alias.choices[0]
    return f"MEMHUB_{name.upper()}"


def test_every_setting_is_in_the_readme():
    readme = SETTINGS_DOC.read_text()
    missing = [
        _env_name(name, field)
        for name, field in Settings.model_fields.items()
        if f"`{_env_name(name, field)}`" not in readme
    ]
    assert missing == []
