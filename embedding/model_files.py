"""Where memhub keeps the embedding model, and what makes a directory a usable copy of it.

Without MEMHUB_EMBED_MODEL_PATH the model lives in MEMHUB_DATA_DIR/models: the copy
`memhub-admin model import PATH` made (`imported_dir`), else the one fetched there
(`embedding/fetch.py`). An import is checked before anything uses it: the files a load reads
are there and regular, the ONNX model loads, and a sentence embeds to MEMHUB_EMBED_DIM finite
numbers. The check runs on the copy, in a staging directory beside its final place, which it
then replaces in one rename: a running memhub watching for it never sees half a model, and what
was checked is exactly what is used.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import Settings
from ..errors import ModelInvalid

# What fastembed reads to load the model (its download of Qdrant/all-MiniLM-L6-v2-onnx holds
# these); nothing else of the offered directory is copied.
REQUIRED_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json", "config.json",
                  "special_tokens_map.json")
# all-MiniLM-L6-v2's model.onnx is 87 MiB and its tokenizer files 0.7 MiB together: the bounds
# leave room for other exports of it and refuse a wrong path before copying gigabytes.
MAX_MODEL_BYTES = 1 << 30
MAX_FILE_BYTES = 16 << 20
PROBE = "memhub checks that this sentence embeds."


def models_dir(settings: Settings) -> Path:
    return Path(settings.data_dir).expanduser() / "models"


def imported_dir(settings: Settings) -> Path:
    """Where `memhub-admin model import` puts the model, named after it."""
    return models_dir(settings) / settings.embed_model.rsplit("/", 1)[-1]


def complete(directory: Path) -> bool:
    """True when every file a load reads is in `directory` (no other check: cheap enough to
    call every few seconds)."""
    return all((directory / name).is_file() for name in REQUIRED_FILES)


def check_files(directory: Path) -> None:
    """MODEL_INVALID unless every required file is a regular file within its bound. A FIFO or
    a device named model.onnx would make the copy block or never end."""
    if not directory.is_dir():
        raise ModelInvalid(f"not a directory: {directory}")
    for name in REQUIRED_FILES:
        path = directory / name
        try:
            info = path.stat()  # follows a symlink: the file it names is what gets copied
        except OSError as exc:
            raise ModelInvalid(f"{name} is missing from {directory}", missing=name) from exc
        if not stat.S_ISREG(info.st_mode):
            raise ModelInvalid(f"{name} in {directory} is not a regular file", file=name)
        limit = MAX_MODEL_BYTES if name == "model.onnx" else MAX_FILE_BYTES
        if info.st_size > limit:
            raise ModelInvalid(f"{name} is {info.st_size} bytes, more than {limit}", file=name)


def check_model(directory: Path, settings: Settings) -> dict[str, Any]:
    """MODEL_INVALID unless the model in `directory` loads and embeds PROBE to
    MEMHUB_EMBED_DIM finite numbers (blocking: about a second)."""
    from fastembed import TextEmbedding

    check_files(directory)
    try:
        model = TextEmbedding(settings.embed_model, specific_model_path=str(directory),
                              threads=1)
        vector = next(iter(model.embed([PROBE])))
    except Exception as exc:
        raise ModelInvalid(f"the model does not load or embed: {type(exc).__name__}: "
                           f"{str(exc)[:300]}") from exc
    if len(vector) != settings.embed_dim:
        raise ModelInvalid(f"the model returns {len(vector)}-dimensional vectors, memhub "
                           f"stores {settings.embed_dim} (MEMHUB_EMBED_DIM)", dim=len(vector))
    if not all(math.isfinite(float(x)) for x in vector):
        raise ModelInvalid("the model's vector for a test sentence is not finite")
    return {"dim": len(vector)}


def import_model(source: Path, settings: Settings) -> dict[str, Any]:
    """Copy the model in `source` into `imported_dir` once the copy passes `check_model`,
    replacing an earlier import; MODEL_INVALID (nothing changed) otherwise."""
    started = time.perf_counter()
    source = Path(source).expanduser()
    check_files(source)  # before copying 90 MB of the wrong thing
    target = imported_dir(settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".import-"))
    try:
        for name in REQUIRED_FILES:
            limit = MAX_MODEL_BYTES if name == "model.onnx" else MAX_FILE_BYTES
            _copy_bounded(source / name, staging / name, limit)
        checked = check_model(staging, settings)
        _replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"model": settings.embed_model, "imported_to": str(target),
            "files": list(REQUIRED_FILES), **checked,
            "seconds": round(time.perf_counter() - started, 2)}


def _copy_bounded(src: Path, dst: Path, limit: int) -> None:
    """Copy at most `limit` bytes; a file that grew past it since it was checked is refused."""
    copied = 0
    with open(src, "rb") as reader, open(dst, "wb") as writer:
        while chunk := reader.read(1 << 20):
            copied += len(chunk)
            if copied > limit:
                raise ModelInvalid(f"{src.name} grew past {limit} bytes while being copied",
                                   file=src.name)
            writer.write(chunk)
        writer.flush()
        os.fsync(writer.fileno())


def _replace(staging: Path, target: Path) -> None:
    """Put `staging` in `target`'s place. A rename is atomic; an earlier import is moved aside
    first (a directory cannot be renamed onto a non-empty one) and removed after."""
    old = None
    if target.exists():
        old = target.with_name(f".replaced-{target.name}-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
    staging.rename(target)
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
