"""Loading the model's files into ONNX sessions: once per process and configuration.

The fp32 model embeds memories; its 8-bit copy (embedding/quantized_model.py) embeds queries.
Sessions are opened by memhub (embedding/sessions.py), not by fastembed. Nothing here finds or
fetches a model: the directory is given (embedding/embedder.py decides which).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..config import Settings
from .quantized_model import quantized_copy
from .sessions import open_session

if TYPE_CHECKING:
    from fastembed.text.onnx_embedding import OnnxTextEmbedding

# One loaded model per (name, path, threads, max_tokens, quantization) per process: an app
# rebuilt in the same process (tests, benchmarks, a reload) reuses it instead of loading another
# ~100 MB ONNX session, which onnxruntime never gives back to the OS.
_MODELS: dict[tuple[Any, ...], Any] = {}
_MODELS_LOCK = threading.Lock()


def load_model(settings: Settings, *, for_queries: bool = False,
               model_dir: Path | None = None) -> Any:
    """fastembed's TextEmbedding for the model in `model_dir` (MEMHUB_EMBED_MODEL_PATH by
    default; blocking: seconds). Memories use the model as shipped; queries (`for_queries`)
    use its 8-bit copy unless MEMHUB_QUERY_QUANTIZE=none (made on first use, a few seconds).
    Never downloads."""
    quantize = settings.query_quantize if for_queries else "none"
    threads = settings.query_threads if quantize != "none" else settings.embed_threads
    path = model_dir if model_dir is not None else settings.embed_model_path
    if path is None:
        raise FileNotFoundError("no model directory given")
    return _load_model(settings.embed_model, Path(path), threads, settings.embed_max_tokens,
                       quantize, settings.model_cache_dir)


def _load_model(name: str, path: Path, threads: int, max_tokens: int = 256,
                quantize: str = "none", cache_dir: Any = None) -> Any:
    from fastembed import TextEmbedding

    key = (name, str(path), threads, max_tokens, quantize,
           str(cache_dir) if cache_dir is not None else None)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            if not path.is_dir():
                raise FileNotFoundError(f"not a directory: {path}")
            where: dict[str, Any] = {"specific_model_path": str(path)}
            # Resolve the fp32 files only (lazy: no ONNX session); the session is opened
            # below, by memhub (embedding/sessions.py), not by fastembed. fastembed types
            # `.model` as the abstract TextEmbeddingBase; memhub serves ONNX models only (the
            # session is opened on the .onnx file), and fastembed makes those an
            # OnnxTextEmbedding, which declares the directory and description read here.
            source = cast("OnnxTextEmbedding", TextEmbedding(name, lazy_load=True, **where).model)
            source_file = Path(source._model_dir) / source.model_description.model_file
            if quantize != "none":
                copy = quantized_copy(Path(source._model_dir),
                                      source.model_description.model_file, Path(cache_dir),
                                      quantize)
                where = {"specific_model_path": str(copy)}
            model = TextEmbedding(name, threads=threads, lazy_load=True, **where)
            # The memories' model (also the queries' with MEMHUB_QUERY_QUANTIZE=none) gives
            # its activations back after each run (embedding/sessions.py, ARENA_SHRINK).
            shrink_arena = quantize == "none"
            # The query copy's threads sleep between runs: on a 2-core machine a spinning
            # second thread takes the core PostgreSQL needs for the other leg (measured: server
            # CPU per hybrid search 12 -> 33 ms, p50 20 -> 24 ms). Asleep, two threads embed a
            # query ~1.5 ms sooner than one (docs/performance.md).
            open_session(model, threads, spinning=quantize == "none",
                         table_source=source_file, cache_dir=cache_dir,
                         shrink_arena=shrink_arena)
            _truncate(model, max_tokens)
            _MODELS[key] = model
        return model


def _truncate(model: Any, max_tokens: int) -> None:
    """Cut inputs at `max_tokens`. fastembed truncates at the tokenizer's model_max_length (512
    here), but all-MiniLM-L6-v2 was trained on 256-token inputs: the tail past that adds
    quadratic attention cost (a 512-token abstract embeds ~4x slower) and no trained meaning."""
    inner = getattr(model, "model", None)
    if inner is None:
        return
    if getattr(inner, "tokenizer", None) is None and hasattr(inner, "load_onnx_model"):
        inner.load_onnx_model()
    tokenizer = getattr(inner, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.enable_truncation(max_length=max_tokens)
