"""The sentence-embedding model: loaded once, off the request path, never downloaded.

`Embedder.start()` loads fastembed's `TextEmbedding` in a daemon thread, so a slow or failing
load never stalls start-up, `initialize` or `/healthz`. Until it is `ready`, searches degrade to
lexical (and say so); writes never wait for it: their embedding jobs stay queued in PostgreSQL.

No network: with `MEMHUB_EMBED_MODEL_PATH` set the model is read from that directory; unset, only
fastembed's local cache is tried (`local_files_only`), which fails in milliseconds when the model
is not there, leaving the state `unavailable` with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..config import Settings
from ..lru import LRU
from .quantized_model import quantized_copy
from .sessions import open_session, release_freed_heap

if TYPE_CHECKING:
    from fastembed.text.onnx_embedding import OnnxTextEmbedding

logger = logging.getLogger(__name__)

LOADING, READY, UNAVAILABLE = "loading", "ready", "unavailable"
# Texts per model call within a document batch (see Embedder.embed_documents). onnxruntime's
# arena keeps the largest activations it has held, which grow with the batch (16 texts of 256
# tokens: +230 MiB, for good); 4 costs no more CPU per text than 16 on short notes, where
# padding already makes larger batches no cheaper (docs/performance.md).
DOC_BATCH = 4
# Query embeddings started ahead of their search (Embedder.prefetch) at once, at most: each
# is the work its search would do anyway, and this bounds what a burst can queue.
PREFETCH_MAX = 32
# How long shutdown waits for a model load in progress (a cold load takes a few seconds).
SHUTDOWN_LOAD_WAIT = 60.0

# One loaded model per (name, path, threads, max_tokens, quantization) per process: an app
# rebuilt in the same process (tests, benchmarks, a reload) reuses it instead of loading another
# ~100 MB ONNX session, which onnxruntime never gives back to the OS.
_MODELS: dict[tuple[Any, ...], Any] = {}
_MODELS_LOCK = threading.Lock()


def load_model(settings: Settings, *, for_queries: bool = False) -> Any:
    """fastembed's TextEmbedding as the settings describe it (blocking: seconds). Memories use
    the model as shipped; queries (`for_queries`) use its 8-bit copy unless
    MEMHUB_QUERY_QUANTIZE=none (made on first use, a few seconds). Never downloads."""
    quantize = settings.query_quantize if for_queries else "none"
    threads = settings.query_threads if quantize != "none" else settings.embed_threads
    return _load_model(settings.embed_model, settings.embed_model_path, threads,
                       settings.embed_max_tokens, quantize, settings.model_cache_dir)


def _load_model(name: str, path: Any, threads: int, max_tokens: int = 256,
                quantize: str = "none", cache_dir: Any = None) -> Any:
    from fastembed import TextEmbedding

    key = (name, str(path) if path is not None else None, threads, max_tokens, quantize,
           str(cache_dir) if cache_dir is not None else None)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            if path is not None:
                if not path.is_dir():
                    raise FileNotFoundError(f"MEMHUB_EMBED_MODEL_PATH is not a directory: {path}")
                where: dict[str, Any] = {"specific_model_path": str(path)}
            else:
                # Never reach for the hub: the cache or nothing.
                where = {"local_files_only": True}
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
            # The query copy's threads sleep between runs: on a 2-core machine a spinning
            # second thread takes the core PostgreSQL needs for the other leg (measured: server
            # CPU per hybrid search 12 -> 33 ms, p50 20 -> 24 ms). Asleep, two threads embed a
            # query ~1.5 ms sooner than one (docs/performance.md).
            open_session(model, threads, spinning=quantize == "none",
                         table_source=source_file, cache_dir=cache_dir)
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


class Embedder:
    """One model per process. Thread-safe: onnxruntime sessions may run concurrently."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # The label stored with every vector. Memories are always embedded by the model as
        # shipped, so the query model's quantization (MEMHUB_QUERY_QUANTIZE) is not part of it.
        self.model_name = settings.embed_model
        self.dim = settings.embed_dim
        self.cache: LRU[str, np.ndarray] = LRU(settings.query_cache_size)  # queries repeat
        self._model: Any = None  # memories
        self._query_model: Any = None  # queries: the same model, or its 8-bit copy
        self._query_model_state: str | None = None
        self._state = LOADING
        self._reason: str | None = None
        self._load_seconds: float | None = None
        self._ready = threading.Event()  # set when loading ends, either way
        self._thread: threading.Thread | None = None
        # Queries whose embedding started before their search asked (prefetch), by text; only
        # touched on the event loop. Counters for `stats`.
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        self.prefetch_started = 0
        self.prefetch_joined = 0
        self.worker: Any = None  # the in-process EmbeddingWorker, when one runs (for stats)

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin loading in the background; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="memhub-embedder", daemon=True)
            self._thread.start()

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            model = load_model(self.settings)
            query_model = self._load_query_model(model)
            for loaded in [model] if query_model is model else [model, query_model]:
                probe = next(iter(loaded.embed(["probe"])))
                if len(probe) != self.dim:
                    raise ValueError(
                        f"model {self.model_name} returns {len(probe)}-d vectors, "
                        f"MEMHUB_EMBED_DIM is {self.dim}"
                    )
            release_freed_heap()  # what reading the model files left in the heap
        except Exception as exc:  # any failure leaves the service up, lexical-only
            self._state = UNAVAILABLE
            self._reason = f"{type(exc).__name__}: {str(exc)[:300]}"
            logger.warning(
                "embedding model unavailable: search is lexical-only and hybrid results say "
                "degraded=true; writes still queue their embedding jobs",
                extra={"model": self.model_name, "reason": self._reason},
            )
        else:
            self._model = model
            self._query_model = query_model
            self._state = READY
            self._load_seconds = round(time.perf_counter() - started, 3)
            logger.info(
                "embedding model ready",
                extra={"model": self.model_name, "seconds": self._load_seconds},
            )
        finally:
            self._ready.set()

    def _load_query_model(self, model: Any) -> Any:
        """The 8-bit copy for queries; the shipped model if the copy cannot be made (a
        read-only cache dir, a model the quantizer cannot read): slower, never unavailable."""
        if self.settings.query_quantize == "none":
            self._query_model_state = "as shipped (MEMHUB_QUERY_QUANTIZE=none)"
            return model
        try:
            query_model = load_model(self.settings, for_queries=True)
        except Exception as exc:
            self._query_model_state = (f"as shipped: the {self.settings.query_quantize} "
                                       f"copy failed "
                                       f"({type(exc).__name__}: {str(exc)[:200]})")
            logger.warning("8-bit query model unavailable; queries use the model as shipped",
                           extra={"reason": self._query_model_state})
            return model
        self._query_model_state = self.settings.query_quantize
        return query_model

    def wait(self, timeout: float) -> bool:
        """Block until loading has finished (ready or not); True if it finished in time."""
        return self._ready.wait(timeout)

    @property
    def ready(self) -> bool:
        return self._state == READY

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self._state, "model": self.model_name}
        if self._reason:
            out["reason"] = self._reason
        if self._load_seconds is not None:
            out["load_seconds"] = self._load_seconds
        if self._query_model_state is not None:
            out["query_model"] = self._query_model_state
        out["query_cache"] = {
            "size": len(self.cache), "hits": self.cache.hits, "misses": self.cache.misses
        }
        out["query_prefetch"] = {"started": self.prefetch_started,
                                 "joined": self.prefetch_joined}
        if self.worker is not None:
            out["worker"] = self.worker.status()
        return out

    # --- embedding ------------------------------------------------------------------------
    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Vectors for `texts`, in order (blocking: run it in a thread).

        The model pads every text of a batch to the longest one, so texts are embedded in
        length order, DOC_BATCH at a time: a short memory never pays for a long neighbour."""
        if not self.ready:
            raise RuntimeError(f"embedding model is {self._state}")
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = self._model.embed([texts[i] for i in order], batch_size=DOC_BATCH)
        out: list[Any] = [None] * len(texts)
        for i, vector in zip(order, vectors, strict=True):
            out[i] = vector
        return out

    def prefetch(self, text: str) -> bool:
        """Start embedding `text` now, in a worker thread, for a search about to ask for it
        (gateway/query_prefetch.py: the request has been authenticated, the MCP layers have
        not run yet). Call on the event loop. False when nothing was started: no model yet,
        already cached or started, or PREFETCH_MAX already running."""
        if (not self.ready or text in self._pending or text in self.cache
                or len(self._pending) >= PREFETCH_MAX):
            return False
        future = asyncio.get_running_loop().run_in_executor(None, self.embed_query, text)
        self._pending[text] = future
        self.prefetch_started += 1

        def settled(done: asyncio.Future) -> None:
            self._pending.pop(text, None)
            if not done.cancelled():
                done.exception()  # retrieved: a search that awaited it has its own copy

        future.add_done_callback(settled)
        return True

    async def query_vector(self, text: str) -> np.ndarray:
        """embed_query off the event loop, joining the prefetch of the same text if one is
        running (the query is embedded once)."""
        pending = self._pending.get(text)
        if pending is not None:
            self.prefetch_joined += 1
            # Shielded: a cancelled search must not cancel what another may be awaiting.
            return await asyncio.shield(pending)
        return await asyncio.to_thread(self.embed_query, text)

    async def query_vectors(self, texts: list[str]) -> list[np.ndarray]:
        """The vectors of a question and its phrasings, off the event loop: those not in the
        LRU embedded in one batch (storage/postgres/retrieval/search.py, `also`)."""
        return await asyncio.to_thread(self.embed_queries, texts)

    def embed_queries(self, texts: list[str]) -> list[np.ndarray]:
        """embed_query for several texts, the uncached ones in one model call (blocking)."""
        if not self.ready:
            raise RuntimeError(f"embedding model is {self._state}")
        out: list[np.ndarray | None] = [self.cache.get(text) for text in texts]
        missing = [i for i, vector in enumerate(out) if vector is None]
        if missing:
            fresh = self._query_model.query_embed([texts[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                vector.setflags(write=False)
                self.cache.put(texts[i], vector)
                out[i] = vector
        return [vector for vector in out if vector is not None]

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector, from the LRU when it was asked before (blocking)."""
        if not self.ready:
            raise RuntimeError(f"embedding model is {self._state}")
        cached = self.cache.get(text)
        if cached is not None:
            return cached
        vector = next(iter(self._query_model.query_embed([text])))
        vector.setflags(write=False)
        self.cache.put(text, vector)
        return vector


def document_text(title: str | None, content: str) -> str:
    """What a memory's vector is computed from (title first: it is the densest summary)."""
    return f"{title}\n{content}" if title else content
