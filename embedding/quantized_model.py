"""An 8-bit copy of the ONNX embedding model for queries, made once from the fp32 export.

Why: every search embeds its query on the request's critical path. On the 2-core target
machine the fp32 MiniLM takes ~4 ms of one core alone and 7-9 ms inside the server, where
PostgreSQL and the event loop evict its 42 MB of encoder weights from the caches between two
queries (measured: 4.0 ms back to back, 6.6 ms with 256 MB touched in between). 8-bit weights
are a quarter of those bytes and run on the CPU's int8 dot-product instructions.
Memories are still embedded by the fp32 model (off the request path), so their vectors, the
label stored with them and what they mean stay those of the shipped model.

Three recipes:
- `int8-block` (the default): onnxruntime's weight-only quantizer (`MatMulNBitsQuantizer`):
  each weight column int8 in blocks of 128 with a scale per block; the products computed in
  int8 with the activations quantized per block too (`accuracy_level` 4). Query vectors at
  cosine ~0.999 to fp32, and SciFact ranks as with fp32 (docs/performance.md). Fast on CPUs with
  VNNI; on AVX2 alone it has no 8-bit kernel and runs at about fp32 speed.
- `int8-token` (embedding/token_int8.py): each weight matmul in integer arithmetic, the
  activations quantized per token (row) after SmoothQuant's per-channel balancing, on
  onnxruntime's plain `MatMulInteger` (u8 x s8, 7-bit weights, so AVX2 without VNNI cannot
  saturate). Cosine ~0.9986 to fp32; for AVX2-only hosts, where a query took 5.5 ms against
  int8-block's 7.4 (docs/performance.md).
- `int8`: onnxruntime's dynamic quantization (`quantize_dynamic`), weights int8 per output
  channel with `reduce_range` (7-bit weights), activations per tensor: fastest, but vectors at
  cosine ~0.99 and SciFact's hybrid nDCG@10 0.716 -> 0.707.
Each copy is deterministic: the same source file (and, for int8-token, the same calibration
texts and onnxruntime) always gives the same bytes. onnxruntime picks its kernels by CPU (VNNI
or not), so the last digits of a query vector may differ between machines; memories' vectors,
made by the shipped model, do not, and never depend on the recipe.

The copy lives in `<cache_dir>/<sha256 of the source>-<recipe>/` beside the source's tokenizer
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

from .token_int8 import CALIBRATION

logger = logging.getLogger(__name__)

# int8-block: weights per block of this many inputs (128 measured fastest of 32/64/128/256
# here, at equal quality), products in int8 (MatMulNBits accuracy_level 4).
BLOCK_SIZE = 128
ACCURACY_LEVEL = 4


def quantized_copy(source_dir: Path, model_file: str, cache_dir: Path,
                   recipe: str = "int8-block") -> Path:
    """The directory of the `recipe` copy of `source_dir/model_file` (made if missing), holding
    the quantized model under the same relative name and every other file of `source_dir`."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown quantization recipe {recipe!r}; one of {RECIPES}")
    source = source_dir / model_file
    with source.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256")
    for extra in _INPUTS.get(recipe, ()):  # whatever else the copy is made from
        digest.update(extra.read_bytes())
    target = cache_dir / f"{digest.hexdigest()[:16]}-{recipe}"
    if (target / model_file).is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_dir))
    try:
        shutil.copytree(source_dir, building, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.onnx", "*.onnx_data"))
        (building / model_file).parent.mkdir(parents=True, exist_ok=True)
        logger.info("quantizing the query model (once)",
                    extra={"source": str(source), "target": str(target), "recipe": recipe})
        _QUANTIZERS[recipe](source, building / model_file)
        try:
            os.rename(building, target)
        except OSError:
            if not (target / model_file).is_file():
                raise
            # Another process published the same copy first: use theirs.
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def _dynamic_int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=True)


def _block_int8(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    config = DefaultWeightOnlyQuantConfig(block_size=BLOCK_SIZE, is_symmetric=True,
                                          accuracy_level=ACCURACY_LEVEL, bits=8)
    quantizer = MatMulNBitsQuantizer(onnx.load(source), algo_config=config)
    quantizer.process()
    quantizer.model.save_model_to_file(str(target), use_external_data_format=False)


def _token_int8(source: Path, target: Path) -> None:
    from .token_int8 import quantize_per_token

    calibration = _INPUTS["int8-token"][0]  # the file the copy's name was made from
    texts = [line for line in calibration.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    quantize_per_token(source, target, texts)


# The recipes (MEMHUB_QUERY_QUANTIZE, the default first); each names its copy's directory, so a
# different recipe is a different copy.
_QUANTIZERS = {"int8-block": _block_int8, "int8-token": _token_int8, "int8": _dynamic_int8}
# Files besides the model that a recipe's copy is made from: part of the copy's name.
_INPUTS = {"int8-token": (CALIBRATION,)}
RECIPES = tuple(_QUANTIZERS)
