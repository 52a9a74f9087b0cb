import subprocess
import sys
from pathlib import Path

from tests.conftest import WEB_TOKEN

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "smoke_mcp.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_smoke_passes_against_a_running_server_with_a_valid_token(server):
    result = _run(server.base_url, WEB_TOKEN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout


def test_smoke_exits_non_zero_with_a_wrong_token(server):
    result = _run(server.base_url, "mh_not_a_real_token")
    assert result.returncode == 1
    assert "FAIL initialize" in result.stdout
