"""Fetching the embedding model into MEMHUB_DATA_DIR/models, as fastembed downloads it.

fastembed's own download (its Hugging Face source, the hub's cache layout, HF_ENDPOINT for a
mirror) into the data directory, so the next start finds it there without a network. memhub
calls it in a thread of its own rather than through `TextEmbedding(...)`, whose download
retries with sleeps of 3 and 9 s and prints progress bars: here one attempt, bounded by
MEMHUB_EMBED_FETCH_TIMEOUT_SECONDS, abandoned on shutdown, with the bytes received logged
every PROGRESS_EVERY seconds. The embedder's loader (embedding/embedder.py) calls `download`
only in the server, when no copy is on disk and MEMHUB_EMBED_OFFLINE is not set.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Settings
from .model_files import models_dir

logger = logging.getLogger(__name__)

PROGRESS_EVERY = 5.0
_POLL = 0.25  # how soon a stop or the end of the download is noticed


class FetchStopped(Exception):
    """The process is stopping: the fetch was abandoned."""


def _source(name: str) -> tuple[Any, str, list[str]]:
    """fastembed's description of the model, its Hugging Face repository and the files a load
    reads; ValueError for a model fastembed does not know."""
    from fastembed import TextEmbedding

    for description in TextEmbedding._list_supported_models():
        if description.model.lower() == name.lower():
            if not description.sources.hf:
                raise ValueError(f"fastembed knows no Hugging Face source for {name}")
            files = [description.model_file, *description.additional_files]
            return description, description.sources.hf, files
    raise ValueError(f"fastembed does not know the model {name}")


def _repo_dir(settings: Settings, repo: str) -> Path:
    from huggingface_hub.file_download import repo_folder_name

    return models_dir(settings) / repo_folder_name(repo_id=repo, repo_type="model")


def cached_copy(settings: Settings) -> Path | None:
    """The fetched copy's directory when a complete one is in the data directory (no network:
    the hub's cache is read locally)."""
    from fastembed.common.model_management import ModelManagement

    try:
        _, repo, files = _source(settings.embed_model)
    except ValueError:
        return None
    if not _repo_dir(settings, repo).is_dir():
        return None
    try:
        found = Path(ModelManagement.download_files_from_huggingface(
            repo, cache_dir=str(models_dir(settings)), extra_patterns=files,
            local_files_only=True))
    except Exception:  # an absent or partial copy: not there
        return None
    return found if all((found / name).is_file() for name in files) else None


def download(settings: Settings, stop: threading.Event,
          progress: Callable[[int], None]) -> Path:
    """Download the model into the data directory and return its directory (blocking, at
    most MEMHUB_EMBED_FETCH_TIMEOUT_SECONDS, after which the download's thread is abandoned:
    the next start's fetch resumes what it received). `progress` is told the bytes received so
    far. Raises what the download raised, TimeoutError, or FetchStopped once `stop` is set."""
    from fastembed.common.model_management import ModelManagement
    from huggingface_hub.utils import disable_progress_bars

    description, repo, files = _source(settings.embed_model)
    root = models_dir(settings)
    root.mkdir(parents=True, exist_ok=True)
    blobs = _repo_dir(settings, repo) / "blobs"
    # The hub's bars would draw on the console between the JSON log lines; the log gets the
    # figures instead.
    disable_progress_bars()
    outcome: dict[str, Any] = {}

    def download() -> None:
        try:
            outcome["path"] = Path(ModelManagement.download_files_from_huggingface(
                repo, cache_dir=str(root), extra_patterns=files))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome["error"] = exc

    size_mb = round(description.size_in_GB * 1000)
    logger.info("fetching the embedding model (once; searches are keyword-only until it is "
                "ready)", extra={"model": settings.embed_model, "source": repo,
                                 "into": str(root), "size_mb": size_mb})
    worker = threading.Thread(target=download, name="memhub-model-fetch", daemon=True)
    started = time.monotonic()
    worker.start()
    last_report = started
    while worker.is_alive():
        worker.join(_POLL)
        if stop.is_set():
            raise FetchStopped()
        now = time.monotonic()
        if now - started > settings.embed_fetch_timeout_seconds:
            raise TimeoutError(f"the download took more than "
                               f"{settings.embed_fetch_timeout_seconds:g} s")
        received = _bytes_in(blobs)
        progress(received)
        if now - last_report >= PROGRESS_EVERY:
            last_report = now
            logger.info("fetching the embedding model",
                        extra={"received_mb": round(received / 1e6, 1), "size_mb": size_mb})
    if "error" in outcome:
        raise outcome["error"]
    progress(_bytes_in(blobs))
    logger.info("embedding model fetched", extra={"into": str(outcome["path"]),
                                                  "seconds": round(time.monotonic() - started,
                                                                   1)})
    return outcome["path"]


def _bytes_in(directory: Path) -> int:
    """Bytes in the hub's blob store, partial downloads (`*.incomplete`) included."""
    try:
        return sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())
    except OSError:
        return 0
