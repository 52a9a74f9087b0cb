"""The model's derived files (the query model's 8-bit copy, the mapped copies, the shared
word-embedding table) made by a child process before the server opens its sessions.

Why: making them reads whole models into the heap (onnx.load, the quantizer's graph, the
table's extraction), and glibc keeps much of what is freed: on an empty MEMHUB_MODEL_CACHE_DIR
the server's peak RSS reached 433 MiB while its models at rest hold 256 (2026-12-06,
docs/performance.md). A child's memory goes back to the system when it exits; the server then
opens its sessions from the files, as on every later start. The child runs the same code the
server would (embedding/loading.py), so the files are the same; if it fails (no interpreter
to spawn, a timeout), the server makes them itself as before. A marker file, written once the
child succeeded, keeps later starts from spawning one.

    python -m memhub.embedding.prepare MODEL_DIR CACHE_DIR MODEL_NAME QUANTIZE MAX_TOKENS
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from ..config import Settings

logger = logging.getLogger(__name__)

# A cold build takes seconds (the 8-bit copy: ~5 s on two busy cores); past this, the server
# builds in-process rather than wait on a stuck child.
CHILD_TIMEOUT = 300.0
# Bumped when what the child builds changes, so an old marker does not vouch for new files.
FORMAT = "1"


def marker(settings: Settings, model_dir: Path) -> Path:
    """The file that says the derived files of this model and recipe are in the cache."""
    key = hashlib.sha256(FORMAT.encode())
    for item in (str(model_dir.resolve()), settings.embed_model, settings.query_quantize,
                 str(settings.embed_max_tokens)):
        key.update(item.encode() + b"\0")
    for entry in sorted(model_dir.iterdir()):
        if entry.is_file():
            info = entry.stat()
            key.update(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}\0".encode())
    return Path(settings.model_cache_dir) / f"{key.hexdigest()[:16]}-prepared"


def in_child(settings: Settings, model_dir: Path) -> bool:
    """Make the derived files in a child process unless the marker says they exist. True
    when they exist; False when the child failed (the caller builds them in-process)."""
    try:
        done = marker(settings, model_dir)
        if done.is_file():
            return True
        command = [sys.executable, "-m", "memhub.embedding.prepare", str(model_dir),
                   str(settings.model_cache_dir), settings.embed_model, settings.query_quantize,
                   str(settings.embed_max_tokens)]
        result = subprocess.run(command, capture_output=True, timeout=CHILD_TIMEOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        logger.warning("model files not prepared in a child process; building them here",
                       extra={"reason": f"{type(exc).__name__}: {str(exc)[:200]}"})
        return False
    if result.returncode != 0 or not done.is_file():
        logger.warning("model files not prepared in a child process; building them here",
                       extra={"reason": result.stderr.decode(errors="replace")[-300:]})
        return False
    return True


def main(argv: list[str]) -> int:
    from .loading import load_model

    model_dir, cache_dir, name, quantize, max_tokens = argv
    settings = Settings(embed_model=name, embed_model_path=Path(model_dir),
                        model_cache_dir=Path(cache_dir),
                        query_quantize=cast(Any, quantize),  # Settings checks it
                        embed_max_tokens=int(max_tokens), embed_threads=1, query_threads=1)
    load_model(settings)
    if quantize != "none":
        load_model(settings, for_queries=True)
    done = marker(settings, Path(model_dir))
    done.parent.mkdir(parents=True, exist_ok=True)
    done.write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
