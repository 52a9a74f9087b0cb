"""The sentence-embedding model: found or fetched, then loaded once, off the request path.

`Embedder.start()` does all of it in a daemon thread, so a slow or failing load (or fetch)
never stalls start-up, `initialize` or `/healthz`. Until it is `ready`, searches degrade to
lexical (and say so); writes never wait for it: their embedding jobs stay queued in PostgreSQL.

Where the model comes from, first found first: MEMHUB_EMBED_MODEL_PATH; the copy
`memhub-admin model import` put in MEMHUB_DATA_DIR/models; the copy fetched there earlier
(embedding/model_files.py). With none, a server (`fetch=True`) downloads it there once
(embedding/fetch.py) unless MEMHUB_EMBED_OFFLINE is set; failing that the state is `absent`,
with the reason and the command that fixes it, and the server (`watch=True`) keeps looking for
an import, which it loads within WATCH_SECONDS.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..errors import MODEL_IMPORT_COMMAND, ModelAbsent
from ..lru import LRU
from . import model_files, prepare
from .batches import DOC_BATCH, DOC_BATCH_TOKENS, token_batches, token_counts
from .fetch import FetchStopped, cached_copy, download
from .loading import load_model
from .sessions import release_freed_heap

logger = logging.getLogger(__name__)

LOADING, READY, UNAVAILABLE = "loading", "ready", "unavailable"
# No model anywhere memhub looks, none fetched; FETCHING: being downloaded (embedding/fetch.py).
ABSENT, FETCHING = "absent", "fetching"
# Why there is no model (status()["reason"]): no model on disk and MEMHUB_EMBED_OFFLINE set;
# none on disk in a process that does not fetch (a command); the fetch failed or took longer
# than MEMHUB_EMBED_FETCH_TIMEOUT_SECONDS; a model was found but did not load (unavailable).
REASONS = ("offline", "not_on_disk", "download_failed", "download_timed_out", "load_failed")
# How often a server without a model looks for one `memhub-admin model import` put in place.
WATCH_SECONDS = 2.0
# Query embeddings started ahead of their search (Embedder.prefetch) at once, at most.
PREFETCH_MAX = 32
# How long shutdown waits for a model load in progress (a cold load takes a few seconds).
SHUTDOWN_LOAD_WAIT = 60.0


class Embedder:
    """One model per process. Thread-safe: onnxruntime sessions may run concurrently."""

    def __init__(self, settings: Settings, *, fetch: bool = False, watch: bool = False,
                 announce: Callable[[dict[str, Any]], None] | None = None) -> None:
        """`fetch`: download the model when none is on disk (unless MEMHUB_EMBED_OFFLINE);
        `watch`: without one, keep looking for an import. Both for the server only, so a
        command or a test never reaches for the network. `announce` is called with `status()`
        at each change of state (the server prints it on the console)."""
        self.settings = settings
        # The label stored with every vector. Memories are always embedded by the model as
        # shipped, so the query model's quantization (MEMHUB_QUERY_QUANTIZE) is not part of it.
        self.model_name = settings.embed_model
        self.dim = settings.embed_dim
        self.cache: LRU[str, np.ndarray] = LRU(settings.query_cache_size)  # queries repeat
        self._model: Any = None  # memories
        self._query_model: Any = None  # queries: the same model, or its 8-bit copy
        self._query_model_state: str | None = None
        self._fetch = fetch and not settings.embed_offline
        self._watch = watch
        self._announce = announce
        self._state = LOADING
        self._source: str | None = None  # where the model was found
        # Why there is no model: one of REASONS (shown by /healthz to anyone), and the detail
        # (an exception's text, paths: only for the operator and all-namespace tokens).
        self._reason: str | None = None
        self._detail: str | None = None
        self._received = 0  # bytes of a fetch so far
        self._load_seconds: float | None = None
        self._ready = threading.Event()  # set once loading has settled: ready or no model
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Queries whose embedding started before their search asked (prefetch), by text; only
        # touched on the event loop. Counters for `stats`.
        # Prefetches running, by text (a plain query) or by a question's texts (with `also`).
        self._pending: dict[tuple[str, ...], asyncio.Future[Any]] = {}
        self.prefetch_started = 0
        self.prefetch_joined = 0
        self.worker: Any = None  # the in-process EmbeddingWorker, when one runs (for stats)

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin finding and loading in the background; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="memhub-embedder", daemon=True)
            self._thread.start()

    def stop(self, timeout: float) -> None:
        """End the background work: a fetch or a watch at once, a load in progress when it is
        done (at most `timeout`): a process that exits while onnxruntime builds a session
        aborts (std::terminate, exit 134) instead of exiting cleanly."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _load(self) -> None:
        try:
            found = self._find()
            if found is None and self._fetch:
                found = self._fetched()
            if found is None and not self._stop.is_set():
                self._set(ABSENT)
                found = self._imported_later()
            if found is not None and not self._stop.is_set():
                self._source = found[0]
                self._build(found[1])
        except Exception as exc:  # a data directory it cannot read: keyword-only, and why
            self._reason, self._detail = "load_failed", f"{type(exc).__name__}: {str(exc)[:300]}"
            self._set(UNAVAILABLE)
        finally:
            self._ready.set()

    def _find(self) -> tuple[str, Path] | None:
        """Where the model is on disk, first found first; None when nowhere (no network)."""
        if self.settings.embed_model_path is not None:
            return "MEMHUB_EMBED_MODEL_PATH", Path(self.settings.embed_model_path)
        imported = model_files.imported_dir(self.settings)
        if model_files.complete(imported):
            return "imported", imported
        fetched = cached_copy(self.settings)
        if fetched is not None:
            return "fetched", fetched
        self._reason = "offline" if self.settings.embed_offline else "not_on_disk"
        return None

    def _fetched(self) -> tuple[str, Path] | None:
        self._set(FETCHING)
        try:
            path = download(self.settings, self._stop, self._progress)
        except FetchStopped:
            return None
        except Exception as exc:  # no network, a mirror that fails: keyword-only, and why
            self._reason = ("download_timed_out" if isinstance(exc, TimeoutError)
                            else "download_failed")
            self._detail = f"{type(exc).__name__}: {str(exc)[:300]}"
            return None
        return "fetched", path

    def _progress(self, received: int) -> None:
        self._received = received

    def _imported_later(self) -> tuple[str, Path] | None:
        """Wait for `memhub-admin model import` (it renames a checked copy into place, so a
        complete directory is a whole model); None when not watching or stopping."""
        imported = model_files.imported_dir(self.settings)
        while self._watch and not self._stop.wait(WATCH_SECONDS):
            if model_files.complete(imported):
                self._reason = self._detail = None
                self._set(LOADING)
                return "imported", imported
        return None

    def _build(self, model_dir: Path) -> None:
        started = time.perf_counter()
        prepare.in_child(self.settings, model_dir)  # the heap a cold build takes, elsewhere
        try:
            model = load_model(self.settings, model_dir=model_dir)
            query_model = self._load_query_model(model, model_dir)
            for loaded in [model] if query_model is model else [model, query_model]:
                probe = next(iter(loaded.embed(["probe"])))
                if len(probe) != self.dim:
                    raise ValueError(
                        f"model {self.model_name} returns {len(probe)}-d vectors, "
                        f"MEMHUB_EMBED_DIM is {self.dim}"
                    )
            release_freed_heap()  # what reading the model files left in the heap
        except Exception as exc:  # any failure leaves the service up, lexical-only
            self._reason = "load_failed"
            self._detail = f"{type(exc).__name__}: {str(exc)[:300]}"
            self._set(UNAVAILABLE)
        else:
            self._model = model
            self._query_model = query_model
            self._load_seconds = round(time.perf_counter() - started, 3)
            self._set(READY)

    def _set(self, state: str) -> None:
        self._state = state
        if state in (ABSENT, UNAVAILABLE):
            self._ready.set()  # settled: whoever waits for the load learns there is no model
            logger.warning(
                "embedding model %s: search is keyword-only and hybrid results say "
                "degraded=true; writes still queue their embedding jobs", state,
                extra={"model": self.model_name, "reason": self._reason,
                       "detail": self._detail, "fix": self._fix()})
        elif state == READY:
            logger.info("embedding model ready", extra={
                "model": self.model_name, "source": self._source, "seconds": self._load_seconds})
        if self._announce is not None:
            self._announce(self.status())

    def _fix(self) -> str:
        """The one thing that gives this process a model. A server without one picks up an
        import by itself; one whose model did not load reads it at its next start."""
        if self._source == "MEMHUB_EMBED_MODEL_PATH":
            return ("point MEMHUB_EMBED_MODEL_PATH at the model's directory, or unset it and "
                    f"run `{MODEL_IMPORT_COMMAND}`")
        if self._state == UNAVAILABLE:
            return f"{MODEL_IMPORT_COMMAND}, then restart memhub"
        return MODEL_IMPORT_COMMAND

    def _load_query_model(self, model: Any, model_dir: Path) -> Any:
        """The 8-bit copy for queries; the shipped model if the copy cannot be made (a
        read-only cache dir, a model the quantizer cannot read): slower, never unavailable."""
        if self.settings.query_quantize == "none":
            self._query_model_state = "as shipped (MEMHUB_QUERY_QUANTIZE=none)"
            return model
        try:
            query_model = load_model(self.settings, for_queries=True, model_dir=model_dir)
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
        """Block until loading has settled: ready, or no model (absent, unavailable; a later
        import may still make it ready). True if it settled in time."""
        return self._ready.wait(timeout)

    @property
    def ready(self) -> bool:
        return self._state == READY

    @property
    def state(self) -> str:
        return self._state

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self._state, "model": self.model_name}
        if self._source:
            out["source"] = self._source
        if self._state in (ABSENT, UNAVAILABLE):
            out["reason"] = self._reason
            if self._detail:
                out["detail"] = self._detail
            out["fix"] = self._fix()
            if self._state == ABSENT:
                out["remedy"] = ModelAbsent.remedy
        if self._state == FETCHING:
            out["received_mb"] = round(self._received / 1e6, 1)
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

        The model pads every text of a call to the longest one, so texts are embedded in
        length order, in calls of at most DOC_BATCH texts and DOC_BATCH_TOKENS padded tokens
        (`token_batches`): a short memory never pays for a long neighbour, and no call's
        activations outgrow the bound."""
        if not self.ready:
            raise RuntimeError(f"embedding model is {self._state}")
        lengths = token_counts(self._model, list(texts))
        out: list[Any] = [None] * len(texts)
        for chunk in token_batches(lengths, DOC_BATCH, DOC_BATCH_TOKENS):
            vectors = self._model.embed([texts[i] for i in chunk], batch_size=len(chunk))
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = vector
            # What the run gave back sits in the C heap, which glibc keeps (+70 MiB over a
            # few batches of long texts, measured); returned here, a backlog's peak is one
            # call's.
            release_freed_heap()
        return out

    def prefetch(self, text: str, also: Sequence[str] = ()) -> bool:
        """Start embedding `text` now, in a worker thread, for a search about to ask for it
        (gateway/query_prefetch.py: the request has been authenticated, the MCP layers have
        not run yet); with `also` (its other phrasings), all of them in one batch, as
        query_vectors will ask. Call on the event loop. False when nothing was started: no
        model yet, already cached or started, or PREFETCH_MAX already running."""
        key = (text, *also)
        if (not self.ready or key in self._pending or all(t in self.cache for t in key)
                or len(self._pending) >= PREFETCH_MAX):
            return False
        future = asyncio.get_running_loop().run_in_executor(None, self.embed_queries, list(key))
        self._pending[key] = future
        self.prefetch_started += 1

        def settled(done: asyncio.Future) -> None:
            self._pending.pop(key, None)
            if not done.cancelled():
                done.exception()  # retrieved: a search that awaited it has its own copy

        future.add_done_callback(settled)
        return True

    async def query_vector(self, text: str) -> np.ndarray:
        """embed_query off the event loop, joining the prefetch of the same text if one is
        running (the query is embedded once)."""
        return (await self.query_vectors([text]))[0]

    async def query_vectors(self, texts: list[str]) -> list[np.ndarray]:
        """The vectors of a question and its phrasings, off the event loop: those not in the
        LRU embedded in one batch (storage/postgres/retrieval/search.py, `also`), joining
        the prefetch of the same texts if one is running."""
        pending = self._pending.get(tuple(texts))
        if pending is not None:
            self.prefetch_joined += 1
            # Shielded: a cancelled search must not cancel what another may be awaiting.
            return list(await asyncio.shield(pending))
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
