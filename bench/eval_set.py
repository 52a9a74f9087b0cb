"""The hand-graded Paystream set (tests/eval/) loaded through the real write path: the corpus
written with `remember` in file order (supersessions included), the 4 expired memories given a
past expiry by SQL, every vector made by the worker's own code (`process_batch`), the word
statistics counted. Twice: as written (namespace `paystream`), and with the questions each
memory answers (`paystream-q`, tests/eval/memory_questions.json); the queries' other phrasings
are tests/eval/phrasings.json (both described in tests/eval/README.md). Shared by
bench/eval_retrieval.py, bench/eval_recall.py, bench/eval_probe.py and tests/eval/.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from memhub.config import Settings
from memhub.embedding.embedder import Embedder
from memhub.storage.postgres.retrieval import lexicon
from memhub.storage.postgres.retrieval.embedding_queue import process_batch, queue_counts
from memhub.storage.principal import Principal

ROOT = Path(__file__).resolve().parents[1]

EVAL_DIR = ROOT / "tests" / "eval"
DOCS = ROOT / "docs"
K = 10
EVAL_PRINCIPAL = Principal(token_id=0, surface="eval", namespaces=None)


QUESTIONED = "paystream-q"


def load_set() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    corpus = json.loads((EVAL_DIR / "corpus.json").read_text())
    queries = json.loads((EVAL_DIR / "queries.json").read_text())
    return corpus, queries


def load_phrasings() -> dict[str, list[str]]:
    """{query id: its other phrasings}, written by a model that saw only the questions."""
    return {qid: entry["also"]
            for qid, entry in json.loads((EVAL_DIR / "phrasings.json").read_text()).items()}


def load_memory_questions() -> dict[str, list[str]]:
    """{memory ref: the questions it answers}, written by a model that saw only the memories."""
    return json.loads((EVAL_DIR / "memory_questions.json").read_text())


@dataclass
class EvalEnv:
    backend: Any
    namespace: str
    ref_of: dict[str, str]  # memory id -> corpus ref
    id_of: dict[str, str]  # corpus ref -> memory id
    active: set[str]  # refs that are ACTIVE and unexpired
    queries: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)
    quarantined: list[str] = field(default_factory=list)  # refs the injection screen held back
    # The same corpus written with the questions each memory answers (its own namespace).
    questioned: EvalEnv | None = None


async def load_corpus(backend, owner_dsn: str, corpus: dict[str, Any],
                      questions: dict[str, list[str]] | None = None) -> tuple[dict, set, list]:
    """Write every memory through `remember`, in file order (with the questions it answers,
    given `questions`); expire the `expired` ones."""
    namespace = corpus["namespace"]
    id_of: dict[str, str] = {}
    retired: set[str] = set()
    quarantined: list[str] = []
    for memory in corpus["memories"]:
        supersedes = [id_of[ref] for ref in memory.get("supersedes", [])]
        result = await backend.remember(
            EVAL_PRINCIPAL, namespace, content=memory["content"], kind=memory["kind"],
            title=memory.get("title"), tags=memory.get("tags"), supersedes=supersedes or None,
            questions=(questions or {}).get(memory["ref"]),
        )
        if result["outcome"] != "created":
            raise RuntimeError(f"{memory['ref']}: outcome {result['outcome']}")
        if result["memory"].get("quarantined"):
            # Stored but never served: a false positive of the injection screen shows up in
            # the metrics, as it would for a user. The report names them.
            quarantined.append(memory["ref"])
        id_of[memory["ref"]] = result["memory"]["id"]
        retired.update(memory.get("supersedes", []))
    expired = [m["ref"] for m in corpus["memories"] if m.get("expired")]
    with psycopg.connect(owner_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = ANY(%s)",
            [[id_of[ref] for ref in expired]],
        )
    active = set(id_of) - retired - set(expired)
    return id_of, active, quarantined


async def embed_all(backend, embedder: Embedder, settings: Settings, timeout: float = 300.0
                    ) -> float:
    """Drain the embedding queue with the worker's own code; return the seconds it took."""
    started = time.monotonic()
    while True:
        counts = await process_batch(backend, embedder, batch=settings.embed_batch_size,
                                     max_attempts=settings.embed_max_attempts)
        if counts["claimed"] == 0:
            pending = await queue_counts(backend)
            if pending["pending"] == 0:
                return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError("embedding queue did not drain")


async def prepare(dsn: str, settings: Settings) -> EvalEnv:
    """A backend on `dsn` (migrated, empty), the corpus loaded and embedded."""
    from memhub.storage.postgres.backend import PostgresBackend

    corpus, queries = load_set()
    embedder = Embedder(settings)
    embedder.start()
    if not await asyncio.to_thread(embedder.wait, 120) or not embedder.ready:
        raise RuntimeError(f"embedding model not ready: {embedder.status()}")
    backend = PostgresBackend(settings, dsn, embedder=embedder)
    await backend.open()
    timings: dict[str, float] = {}
    started = time.monotonic()
    id_of, active, quarantined = await load_corpus(backend, dsn, corpus)
    timings["load_seconds"] = round(time.monotonic() - started, 2)
    timings["embed_seconds"] = round(await embed_all(backend, embedder, settings), 2)
    asked = {**corpus, "namespace": QUESTIONED}
    q_id_of, q_active, q_quarantined = await load_corpus(backend, dsn, asked,
                                                         load_memory_questions())
    started = time.monotonic()
    timings["embed_with_questions_seconds"] = round(
        await embed_all(backend, embedder, settings), 2)
    # What the background recount (storage/postgres/retrieval/lexicon.py) does within
    # seconds of the load.
    for namespace in (corpus["namespace"], QUESTIONED):
        await lexicon.refresh(backend, namespace)
    questioned = EvalEnv(backend, QUESTIONED, {v: k for k, v in q_id_of.items()}, q_id_of,
                         q_active, queries, timings, q_quarantined)
    return EvalEnv(backend, corpus["namespace"], {v: k for k, v in id_of.items()}, id_of,
                   active, queries, timings, quarantined, questioned)


@asynccontextmanager
async def embedded_eval_env(
    prefix: str = "memhub-eval-",
) -> AsyncIterator[tuple[EvalEnv, Settings]]:
    """(env, settings): the set loaded into a fresh embedded cluster, which is stopped and
    removed on the way out (bench/eval_probe.py uses it too)."""
    from memhub.storage.postgres.embedded import EmbeddedPostgres
    from memhub.storage.postgres.migrate import apply_migrations

    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        cluster = EmbeddedPostgres(workdir)
        dsn = cluster.start()
        try:
            apply_migrations(dsn)
            settings = Settings(database_url=dsn, data_dir=workdir, log_level="WARNING")
            env = await prepare(dsn, settings)
            try:
                yield env, settings
            finally:
                await env.backend.close()
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
