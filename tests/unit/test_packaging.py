"""memhub installs as one package, `memhub`, whose files are the repository's top level.

A wheel built from the checkout holds every module, SQL file, migration, template and calibration
text the server reads at run time, nothing outside `memhub/`, and no top-level name that could
collide with another distribution's (`config`, `errors`, `tools`...). A non-editable install finds
its migrations (checked by importing the built wheel's files, not the checkout's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.source import ROOT, product_modules


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _package_dirs() -> set[str]:
    """Every folder of the checkout that holds product modules, as a dotted package name."""
    return {".".join(("memhub", *path.relative_to(ROOT).parts[:-1]))
            for path in product_modules().values()}


def test_every_folder_of_modules_is_a_listed_package():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    assert _package_dirs() == listed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # From a copy of the sources: a build/ folder left in the checkout by an earlier build would
    # otherwise lend the wheel files that the package configuration no longer ships.
    source = tmp_path_factory.mktemp("source") / "memhub"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "node_modules", "__pycache__", ".*_cache",
        ".memhub-data"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out),
         str(source)],
        check=True, capture_output=True, timeout=300,
    )
    (built,) = out.glob("memhub-*.whl")
    return built


def test_the_wheel_installs_only_the_memhub_package(wheel: Path):
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert whl.read(info).decode().split() == ["memhub"]
    outside = [n for n in names if not n.startswith(("memhub/", "memhub-"))]
    assert outside == []


def test_the_wheel_carries_every_file_read_at_run_time(wheel: Path):
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    wanted = [p for pattern in ("migrations/*.sql", "storage/postgres/sql/*.sql",
                                "embedding/calibration/*.txt", "admin/templates/*.html",
                                "admin/static/*", "oauth/templates/*.html",
                                "web/templates/*.html")
              for p in ROOT.glob(pattern)]
    assert wanted
    missing = [str(p.relative_to(ROOT)) for p in wanted
               if f"memhub/{p.relative_to(ROOT).as_posix()}" not in names]
    assert missing == []


def test_an_installed_wheel_finds_its_migrations_and_sql(wheel: Path, tmp_path: Path):
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(tmp_path)
    probe = (
        "import memhub, memhub.storage.postgres.migrate as m, memhub.storage.postgres.queries as q;"
        "print(list(memhub.__path__)[0]);"
        "print(len(m.migration_files()));"
        "print('INSERT INTO memories' in q.q('memories.insert_memory'))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    where, count, sql = done.stdout.split("\n")[:3]
    assert Path(where) == tmp_path / "memhub"  # the wheel's files, not the checkout's
    assert int(count) == len(list((ROOT / "migrations").glob("*.sql")))
    assert sql == "True"
