"""The onnxruntime sessions of the two models (memories' and queries'), opened by memhub from
mapped weights, with the word-embedding table shared between them.

Why: read as shipped, an .onnx file goes whole into the C heap and onnxruntime copies each
weight out of it, so opening the fp32 model (90 MB) raised the process by ~140 MiB at its peak
and the 8-bit query copy by ~110, and MiniLM's word-embedding table (30,522 tokens x 384
floats, 47 MB, half the fp32 model, kept in fp32 by every query recipe) was held twice. So:
- each model is opened from a copy in MEMHUB_MODEL_CACHE_DIR whose weights sit in a file beside
  it (ONNX external data), which onnxruntime maps instead of reading: no heap copy, and pages
  of the map a kernel never reads again stay out of memory (measured: opening the fp32 model
  +142 -> +56 MiB at peak and at rest, the query copy +112 -> +28; docs/performance.md);
- the table is written once as a .npy and handed to both sessions as their initializer
  (onnxruntime uses such a buffer in place): one copy, held in memory only for the rows of
  the tokens the models have read (embedding/word_table.py).
The vectors are bit-identical: the same numbers, read from elsewhere. Each copy is made on
first use (seconds; the same rename-into-place as embedding/quantized_model.py). Any failure
(a read-only cache directory, a model without a plain Gather on `input_ids`) opens the model
as shipped, with its own table, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .word_table import FillingSession, WordTable

logger = logging.getLogger(__name__)

# onnxruntime's CPU arena keeps, for the life of the session, the largest activations a run
# has needed, and grows by powers of two: one batch of 16 texts of 256 tokens left the
# memories' model +400 MiB for good. The memories' runs (a background worker's, where a few
# hundred microseconds of allocation per run cost no caller anything) end by shrinking the arena
# back to what it held before; their size is bounded by tokens (batches.DOC_BATCH_TOKENS), so
# the peak is too. The query model keeps its arena: queries are short and on the critical path
# (docs/performance.md, "Memory in every load pattern").
ARENA_SHRINK = "cpu:0"
# Initializers at least this large go to the mapped weights file (onnx's own default).
EXTERNAL_MIN_BYTES = 1024
WEIGHTS_FILE = "weights.bin"


def open_session(model: Any, threads: int, *, spinning: bool, table_source: Path,
                 cache_dir: Path | None, shrink_arena: bool = False) -> None:
    """Open the ONNX session of fastembed's lazily loaded `model` with fastembed's settings,
    its worker threads asleep between runs unless `spinning`, from its mapped copy, with the
    word-embedding table of the model file `table_source` (the fp32 model) shared.
    `shrink_arena`: each run hands the memory its activations took back to the system when it
    ends (the memories' model: ARENA_SHRINK below)."""
    import onnxruntime as ort

    inner = model.model
    inner._ensure_tokenizer()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    path = Path(inner._model_dir) / inner.model_description.model_file
    table: WordTable | None = None
    if cache_dir is not None:
        try:
            mapped = _mapped_copy(path, Path(cache_dir))
            table = _shared_table(table_source, Path(cache_dir))
            path = mapped
        except Exception as exc:  # the model as shipped: more memory, the same vectors
            logger.warning("model weights not mapped; opening the model as shipped",
                           extra={"reason": f"{type(exc).__name__}: {str(exc)[:200]}"})
            table = None
    if table is not None:
        options.add_initializer(table.name, table.for_sessions())
    session = ort.InferenceSession(str(path), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    run_options = None
    if shrink_arena:
        run_options = ort.RunOptions()
        run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", ARENA_SHRINK)
    # Every run goes through the table's fill: a row the session reads must be present.
    inner.model = (session if table is None and run_options is None
                   else FillingSession(session, table, run_options))


def release_freed_heap() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim); a no-op elsewhere.
    Called once the models are open: what building their sessions freed is otherwise kept."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to trim, or its allocator returns memory itself


# Kept alive for the sessions that use them (onnxruntime does not copy them); by table file.
_TABLES: dict[Path, WordTable] = {}


def _shared_table(source: Path, cache_dir: Path) -> WordTable | None:
    """`source`'s word-embedding table (None when it has none), one per table file. Models
    without that initializer name ignore it."""
    name, path = _table_file(source, cache_dir)
    if name is None:
        return None
    found = _TABLES.get(path)
    if found is None:
        found = _TABLES[path] = WordTable(name, path)
    return found


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()[:16]


def _mapped_copy(source: Path, cache_dir: Path) -> Path:
    """`<cache_dir>/<digest>-mapped/<name>`: `source` with its weights in WEIGHTS_FILE."""
    target = cache_dir / f"{_digest(source)}-mapped"
    if (target / source.name).is_file():
        return target / source.name
    import onnx

    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_dir))
    try:
        onnx.save(onnx.load(source), building / source.name, save_as_external_data=True,
                  all_tensors_to_one_file=True, location=WEIGHTS_FILE,
                  size_threshold=EXTERNAL_MIN_BYTES)
        building.chmod(0o755)
        try:
            os.rename(building, target)
        except OSError:
            if not (target / source.name).is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target / source.name


def _table_file(source: Path, cache_dir: Path) -> tuple[str | None, Path]:
    """(initializer name, .npy path) of `source`'s word-embedding table, written once under
    `cache_dir`. The name is kept in a sidecar file; an empty one: the model has no table."""
    digest = _digest(source)
    path = cache_dir / f"{digest}-word-embeddings.npy"
    label = cache_dir / f"{digest}-word-embeddings.name"
    if label.is_file() and (path.is_file() or not label.read_text()):
        return label.read_text() or None, path
    name, table = _extract(source)
    cache_dir.mkdir(parents=True, exist_ok=True)
    if table is not None:
        import numpy as np

        _publish(cache_dir, path, lambda fh: np.save(fh, table))
    _publish(cache_dir, label, lambda fh: fh.write((name or "").encode()))
    return name, path


def _publish(cache_dir: Path, path: Path, write) -> None:
    fd, building = tempfile.mkstemp(prefix=".building-", dir=cache_dir)
    with os.fdopen(fd, "wb") as fh:
        write(fh)
    os.chmod(building, 0o644)
    os.replace(building, path)


def _extract(source: Path) -> tuple[str | None, Any]:
    """The initializer a Gather reads with `input_ids` (the word-embedding table), if any."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(source)
    weights = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if (node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == "input_ids"
                and node.input[0] in weights):
            return node.input[0], numpy_helper.to_array(weights[node.input[0]])
    return None, None
