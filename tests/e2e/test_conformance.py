"""The official MCP conformance suite against a real memhub (scripts/run_conformance.sh).

The suite needs Node >= 22: the script runs the Node 22 binary that the npm package `node`
installs into scripts/conformance/node_modules (`.ci/run` installs it; the script installs it
itself when missing). Non-applicable scenarios and why are listed in
scripts/conformance/SCENARIOS.md.
"""

import subprocess
from pathlib import Path

import pytest

from tests.conftest import WEB_TOKEN

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_conformance.sh"


@pytest.mark.slow
def test_every_applicable_conformance_scenario_passes(server):
    result = subprocess.run(
        ["bash", str(SCRIPT), server.base_url, WEB_TOKEN],
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert WEB_TOKEN not in output
    assert result.returncode == 0, output[-4000:]
    for scenario in ("server-initialize", "ping", "tools-list", "dns-rebinding-protection"):
        assert scenario in output
