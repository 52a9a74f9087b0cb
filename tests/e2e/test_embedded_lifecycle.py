"""The embedded PostgreSQL lifecycle, with real memhub processes (no DATABASE_URL)."""

import re

import httpx
import psutil
import pytest

from tests.conftest import WEB_TOKEN
from tests.support.server import process_server


def _postmasters(pgdata) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if proc.info.get("name") == "postgres" and str(pgdata) in " ".join(cmdline):
            found.append(proc)
    return found


def _wait_gone(pgdata, timeout=30.0) -> list[psutil.Process]:
    procs = _postmasters(pgdata)
    gone, alive = psutil.wait_procs(procs, timeout=timeout)
    return alive


@pytest.mark.slow
async def test_two_servers_on_one_data_dir_share_one_cluster_and_leave_no_orphans(tmp_path):
    env = {"MEMHUB_DATA_DIR": str(tmp_path), "MCP_AUTH_TOKEN": WEB_TOKEN}
    pgdata = (tmp_path / "pgdata").resolve()
    with process_server(env) as (first, _):
        with process_server(env) as (second, _):
            assert len(_postmasters(pgdata)) == 1
            for running in (first, second):
                async with running.client(WEB_TOKEN) as client:
                    result = await client.call_tool("stats", {})
                assert result.structured_content["database"] == "ok"
        # The first server still holds a handle: the cluster must survive the second's exit.
        async with first.client(WEB_TOKEN) as client:
            result = await client.call_tool("stats", {})
        assert result.structured_content["database"] == "ok"
    assert _wait_gone(pgdata) == []


@pytest.mark.slow
def test_data_and_tokens_persist_across_restarts(tmp_path):
    env = {"MEMHUB_DATA_DIR": str(tmp_path)}
    with process_server(env) as (running, _):
        pass
    first_output = running.log_path.read_text()
    with process_server(env) as (running, _):
        pass
    second_output = running.log_path.read_text()
    # First boot generates and prints the three surface tokens once; the second finds them.
    assert first_output.count("NEW CLIENT TOKENS") == 1
    assert [s for s in ("web", "desktop-cli", "cursor")
            if re.search(rf"^memhub:   {s} +mh_", first_output, re.M)] == ["web", "desktop-cli",
                                                                          "cursor"]
    assert "NEW CLIENT TOKENS" not in second_output
    assert "mh_" not in second_output
    assert _wait_gone((tmp_path / "pgdata").resolve()) == []


@pytest.mark.slow
def test_a_killed_server_does_not_keep_the_cluster_running_after_the_next_one_stops(tmp_path):
    """A memhub killed with SIGKILL never releases its handle on the embedded cluster. The next
    memhub on the same data dir drops the dead handle, serves, and on stopping is the last
    holder, so the cluster stops with it instead of running on, unowned."""
    env = {"MEMHUB_DATA_DIR": str(tmp_path), "MCP_AUTH_TOKEN": WEB_TOKEN}
    pgdata = (tmp_path / "pgdata").resolve()
    with process_server(env) as (_, proc):
        proc.kill()
        proc.wait(timeout=30)
    assert len(_postmasters(pgdata)) == 1  # orphaned by the kill, as expected
    with process_server(env) as (running, _):
        assert len(_postmasters(pgdata)) == 1  # attached to the orphan, not a second cluster
        assert httpx.get(f"{running.base_url}/healthz", timeout=10).status_code == 200
    assert _wait_gone(pgdata) == []


@pytest.mark.slow
async def test_a_dead_embedded_cluster_is_restarted_and_the_service_recovers(tmp_path):
    """memhub is the embedded cluster's only supervisor: when its postmaster dies (killed,
    crashed, OOM), the watchdog starts it again and the pool reconnects; /healthz says 503
    meanwhile, then 200, and tools work again without restarting memhub."""
    import time

    env = {"MEMHUB_DATA_DIR": str(tmp_path), "MCP_AUTH_TOKEN": WEB_TOKEN}
    pgdata = (tmp_path / "pgdata").resolve()
    with process_server(env) as (running, _):
        (postmaster,) = _postmasters(pgdata)  # its children's command lines do not name pgdata
        postmaster.kill()
        postmaster.wait(timeout=30)
        deadline = time.monotonic() + 60
        statuses = []
        while time.monotonic() < deadline:
            statuses.append(httpx.get(f"{running.base_url}/healthz", timeout=10).status_code)
            if statuses[-1] == 200:
                break
            time.sleep(0.5)
        assert statuses[-1] == 200, statuses
        async with running.client(WEB_TOKEN) as client:
            result = await client.call_tool("stats", {})
        assert result.structured_content["database"] == "ok"
        (revived,) = _postmasters(pgdata)
        assert revived.pid != postmaster.pid
    assert _wait_gone(pgdata) == []
