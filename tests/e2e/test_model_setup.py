"""A new user's embedding model, with memhub run as a separate process as a user runs it: fetched
into the data directory in the background (from a loopback stand-in for the Hugging Face Hub,
tests/support/fake_hub.py, reached through HF_ENDPOINT), or imported with `memhub-admin model
import` from the real ONNX export, or absent: then the server answers by keyword and /healthz,
`stats`, the dashboard and the console all say so with the command that fixes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from memhub.errors import MODEL_IMPORT_COMMAND
from tests.conftest import MODEL_PATH, WEB_TOKEN
from tests.support.admin import PASSWORD, browser, login
from tests.support.fake_hub import FakeHub
from tests.support.server import ROOT, free_port, process_server
from tests.support.wait import until, until_sync

pytestmark = pytest.mark.slow

REPO = "Qdrant/all-MiniLM-L6-v2-onnx"  # where fastembed fetches all-MiniLM-L6-v2 from
NS = "acme"


@pytest.fixture
def model_dir() -> Path:
    """The real ONNX export of all-MiniLM-L6-v2 (CI always has it)."""
    if MODEL_PATH and (Path(MODEL_PATH) / "model.onnx").is_file():
        return Path(MODEL_PATH)
    if os.environ.get("CI"):
        pytest.fail("CI must provide the embedding model (MEMHUB_EMBED_MODEL_PATH)")
    pytest.skip("the embedding model is not on this machine")


def server_env(db_dsn: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """A server with no MEMHUB_EMBED_MODEL_PATH, as after a fresh install."""
    return {"DATABASE_URL": db_dsn, "MEMHUB_DATA_DIR": str(data_dir), "MCP_AUTH_TOKEN": WEB_TOKEN,
            "ADMIN_PASSWORD": PASSWORD, **extra}


def online(hub_url: str) -> dict[str, str]:
    """Fetching allowed, through `hub_url` (tests/conftest.py makes every test offline)."""
    return {"MEMHUB_EMBED_OFFLINE": "0", "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub_url}


def health(running) -> dict:
    response = httpx.get(f"{running.base_url}/healthz", timeout=5)
    assert response.status_code == 200, response.text
    return response.json()


def model_settles(running, state: str, timeout: float = 60.0) -> dict:
    return until_sync(lambda: (h := health(running))["model"] == state and h,
                      timeout=timeout, what=f"/healthz saying model {state}")


async def stats_model(running) -> dict:
    async with running.client(WEB_TOKEN) as client:
        return (await client.call_tool("stats", {})).structured_content["embedding_model"]


async def remember_and_search(running, content: str, query: str, **kw) -> tuple[str, dict]:
    async with running.client(WEB_TOKEN) as client:
        written = await client.call_tool("memory_remember", {"namespace": NS, "content": content})
        found = await client.call_tool("memory_search", {"namespace": NS, "query": query, **kw})
    return written.structured_content["memory"]["id"], found.structured_content


def model_import(data_dir: Path, source: Path, **env_extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.update({"MEMHUB_DATA_DIR": str(data_dir), **env_extra})
    return subprocess.run(
        [str(Path(sys.executable).with_name("memhub-admin")), "model", "import", str(source),
         "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)


async def test_an_offline_server_without_a_model_answers_by_keyword_and_names_the_fix_everywhere(
        db_dsn, tmp_path, model_dir):
    # A reachable hub: only MEMHUB_EMBED_OFFLINE keeps the server from fetching.
    with FakeHub(REPO, model_dir) as hub, process_server(server_env(
            db_dsn, tmp_path, **{**online(hub.url), "MEMHUB_EMBED_OFFLINE": "1"})) as (running, _):
        answer = model_settles(running, "absent")
        assert answer["status"] == "ok" and answer["model_reason"] == "offline"
        assert answer["model_fix"] == MODEL_IMPORT_COMMAND
        model = await stats_model(running)
        assert (model["state"], model["reason"], model["fix"]) == (
            "absent", "offline", MODEL_IMPORT_COMMAND)
        mid, found = await remember_and_search(running, "Payouts close at 17:00 UTC.", "payouts")
        assert found["degraded"] is True and [r["id"] for r in found["results"]] == [mid]
        with browser(running.base_url) as page:
            assert login(page).status_code == 303
            dashboard = page.get("/admin").text
        assert f'<code id="model-fix">{MODEL_IMPORT_COMMAND}</code>' in dashboard
        assert 'data-state="absent"' in dashboard
        assert f"memhub: Fix: {MODEL_IMPORT_COMMAND}" in running.log_path.read_text()
        assert hub.requests == []
        assert not (tmp_path / "models").exists()


async def test_a_fetch_that_fails_leaves_the_server_up_by_keyword_with_the_fix(db_dsn, tmp_path):
    # Nothing listens on the hub's address: the fetch fails at once, as with no internet.
    unreachable = f"http://127.0.0.1:{free_port()}"
    with process_server(server_env(db_dsn, tmp_path, **online(unreachable))) as (running, _):
        answer = model_settles(running, "absent")
        assert (answer["model_reason"], answer["model_fix"]) == ("download_failed",
                                                                 MODEL_IMPORT_COMMAND)
        assert "detail" not in answer  # the exception's text names addresses: not for anyone
        model = await stats_model(running)
        assert model["reason"] == "download_failed" and model["detail"]
        mid, found = await remember_and_search(running, "Refunds need two approvals.",
                                               "refunds")
        assert [r["id"] for r in found["results"]] == [mid]
        assert f"memhub: Fix: {MODEL_IMPORT_COMMAND}" in running.log_path.read_text()


async def test_the_model_is_fetched_in_the_background_into_the_data_directory_once(
        db_dsn, tmp_path, model_dir):
    with FakeHub(REPO, model_dir) as hub:
        release = hub.hold("model.onnx")  # half of it sent, then the line goes quiet
        with process_server(server_env(db_dsn, tmp_path, **online(hub.url))) as (running, _):
            # Started and answering while the model is still on its way.
            model_settles(running, "fetching")
            mid, found = await remember_and_search(running, "Invoices are numbered per year.",
                                                   "invoices")
            assert found["degraded"] is True and found["results"][0]["id"] == mid
            progress = await until(lambda: _received_some(running),
                                   what="stats reporting the bytes received so far")
            assert progress["state"] == "fetching"
            release.set()
            model_settles(running, "ready")
            model = await stats_model(running)
            assert model["source"] == "fetched"
            log = running.log_path.read_text()
        assert "embedding model fetched" in log
        assert list((tmp_path / "models").glob("models--*/snapshots/*/model.onnx"))
        fetched = len(hub.requests)

    # The next start needs no network: the hub is gone and fetching is off.
    with process_server(server_env(db_dsn, tmp_path, MEMHUB_EMBED_OFFLINE="1")) as (again, _):
        model_settles(again, "ready")
        assert (await stats_model(again))["source"] == "fetched"
    assert fetched == len(hub.requests)


async def _received_some(running) -> dict | None:
    model = await stats_model(running)
    return model if model.get("received_mb", 0) > 0 else None


async def test_a_fetch_that_outlasts_its_time_limit_is_given_up(db_dsn, tmp_path, model_dir):
    with FakeHub(REPO, model_dir) as hub:
        hub.hold("model.onnx")  # never released while the server runs
        env = server_env(db_dsn, tmp_path, **online(hub.url),
                         MEMHUB_EMBED_FETCH_TIMEOUT_SECONDS="1")
        with process_server(env) as (running, _):
            answer = model_settles(running, "absent", timeout=30)
            assert answer["model_reason"] == "download_timed_out"


async def test_an_imported_model_is_picked_up_by_the_running_server_and_found_by_the_next_start(
        db_dsn, tmp_path, model_dir):
    env = server_env(db_dsn, tmp_path)  # offline: tests/support/server.py
    with process_server(env) as (running, _):
        # Offline, as every server a test starts is unless it says otherwise.
        assert model_settles(running, "absent")["model_reason"] == "offline"
        # Written while there is no model: its embedding job waits for one.
        mid, _ = await remember_and_search(running, "The ledger service settles card payments.",
                                           "ledger")
        done = model_import(tmp_path, model_dir)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["dim"] == 384 and Path(report["imported_to"]).parent == tmp_path / "models"
        model_settles(running, "ready", timeout=60)
        assert (await stats_model(running))["source"] == "imported"

        async def found_by_meaning() -> bool:
            async with running.client(WEB_TOKEN) as client:
                found = (await client.call_tool("memory_search", {
                    "namespace": NS, "query": "which service settles card payments",
                    "mode": "semantic"})).structured_content
            return mid in [r["id"] for r in found["results"]]

        await until(found_by_meaning, timeout=30, what="a search by meaning finding the memory")
    with process_server(env) as (again, _):
        model_settles(again, "ready")
        assert (await stats_model(again))["source"] == "imported"
