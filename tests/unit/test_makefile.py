"""The Makefile installs what each command needs, once: `make run` the server's dependencies
only, `make test` the test tools too. Run with the real `make` on a copy of the Makefile, with a
stand-in for the virtualenv's python that records each pip command instead of reaching the
package index."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDER = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../pip.log"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
        past = time.time() - 3600  # older than any stamp made below
        os.utime(tmp_path / name, (past, past))
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(RECORDER)
    python.chmod(0o755)
    return tmp_path


def installs(checkout: Path, target: str) -> list[str]:
    """The pip commands `make <target>` ran."""
    log = checkout / ".venv" / "pip.log"
    before = log.read_text().splitlines() if log.exists() else []
    subprocess.run(["make", "--no-print-directory", "-C", str(checkout), target], check=True,
                   capture_output=True, text=True, timeout=60)
    after = log.read_text().splitlines() if log.exists() else []
    return after[len(before):]


def test_make_run_installs_only_what_the_server_needs_and_make_test_adds_the_test_tools(
        checkout):
    first = installs(checkout, "install")
    assert len(first) == 1 and first[0].endswith("-e .")
    assert installs(checkout, "install") == []
    added = installs(checkout, "install-test")
    assert len(added) == 1 and added[0].endswith("-e .[test]")
    assert installs(checkout, "install-test") == []
    assert installs(checkout, "install") == []


def test_make_run_after_make_test_installs_nothing_more(checkout):
    assert len(installs(checkout, "install-test")) == 1
    assert installs(checkout, "install") == []


def test_a_changed_pyproject_installs_again(checkout):
    installs(checkout, "install-test")
    future = time.time() + 60
    os.utime(checkout / "pyproject.toml", (future, future))
    assert len(installs(checkout, "install")) == 1
    assert len(installs(checkout, "install-test")) == 1
