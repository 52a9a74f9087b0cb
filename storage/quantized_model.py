"""An int8 copy of the ONNX embedding model for queries, made once from the fp32 export.

Why: every hybrid search embeds its query on the request's critical path. On the 2-core target
machine the fp32 MiniLM takes ~3.2 ms of one core alone and ~7 ms of wall time while PostgreSQL
runs the lexical leg on the other; int8 halves the work (docs/perf.md has the figures).
Memories are still embedded by the fp32 model (off the request path), so their vectors, the
label stored with them and search quality stay those of the shipped model: measured on the
eval set and SciFact, an int8 query against fp32 memories ranks like an fp32 one.

How: onnxruntime's own dynamic quantization (`quantize_dynamic`), weights int8 per output
channel with `reduce_range` (7-bit weights). Per channel keeps the vectors at cosine ~0.99 to
fp32 (per tensor: ~0.96, and one top-10 result in five changes); 7-bit weights cannot saturate
the u8 x s8 products on x86 CPUs without VNNI, so a vector does not depend on which CPU made
it. The copy is deterministic: the same source file always gives the same bytes.

The copy lives in `<cache_dir>/<sha256 of the source>-<RECIPE>/` beside the source's tokenizer
files, built in a temporary directory and renamed into place, so processes starting together
never read half a model: the first rename wins and the others use it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

# Names the copy's directory: a different recipe is a different copy.
RECIPE = "int8"


def quantized_copy(source_dir: Path, model_file: str, cache_dir: Path) -> Path:
    """The directory of the int8 copy of `source_dir/model_file` (made if missing), holding
    the quantized model under the same relative name and every other file of `source_dir`."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = source_dir / model_file
    with source.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    target = cache_dir / f"{digest[:16]}-{RECIPE}"
    if (target / model_file).is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_dir))
    try:
        shutil.copytree(source_dir, building, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.onnx", "*.onnx_data"))
        (building / model_file).parent.mkdir(parents=True, exist_ok=True)
        logger.info("quantizing the embedding model to int8 (once)",
                    extra={"source": str(source), "target": str(target)})
        quantize_dynamic(source, building / model_file, weight_type=QuantType.QInt8,
                         per_channel=True, reduce_range=True)
        try:
            os.rename(building, target)
        except OSError:
            if not (target / model_file).is_file():
                raise
            # Another process published the same copy first: use theirs.
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target
