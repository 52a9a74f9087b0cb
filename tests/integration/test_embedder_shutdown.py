"""Stopping memhub while the model is still loading exits cleanly.

The model loads in a background thread; a process that exited while onnxruntime was building
a session there aborted (std::terminate: "terminate called without an active exception",
exit status 134). The lifespan now waits for the load before it returns. Run in a fresh
process: this one's model cache would make the load instant.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import MODEL_PATH
from tests.support.retrieval import embedder  # noqa: F401 (fixture)
from tests.support.server import ROOT

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from memhub.app import create_app
    from memhub.config import Settings

    async def main():
        app = create_app(Settings(database_url=sys.argv[1], embed_model_path=sys.argv[2],
                                  mcp_auth_token="t" * 32, data_dir=sys.argv[3]))
        async with app.router.lifespan_context(app):
            embedder = app.state.runtime.embedder
            print("loading at shutdown:", not embedder.wait(0), flush=True)
        print("loader alive after shutdown:", embedder._thread.is_alive(), flush=True)

    asyncio.run(main())
""")


def test_shutdown_during_the_model_load_exits_cleanly(db_dsn, tmp_path, embedder):  # noqa: F811
    # `embedder`: the model is there (skips without one, except on CI, where it fails).
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, db_dsn, str(MODEL_PATH), str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert "loading at shutdown: True" in done.stdout, done.stdout + done.stderr
    assert "loader alive after shutdown: False" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr
