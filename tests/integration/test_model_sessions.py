"""The models' sessions open from mapped weights and share one word-embedding table, held only
for the tokens read (embedding/sessions.py, embedding/word_table.py), and give the same vectors
as the model as shipped.

Real files and a real onnxruntime, no database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastembed import TextEmbedding

from memhub.config import Settings
from memhub.embedding import loading as loading_module
from memhub.embedding import sessions
from memhub.embedding.loading import load_model
from tests.support.retrieval import embedder

__all__ = ["embedder"]

TEXTS = [
    "We replaced Redis with Postgres advisory locks for the job queue",
    "PAYSTREAM_WEBHOOK_SECRET rotates every 90 days",
    "How do tenants get isolated in the billing service?",
]


@pytest.fixture
def model_dir(embedder) -> Path:
    """The shipped model's directory (through the shared fixture: skip without a model, fail
    under CI)."""
    return Path(embedder.settings.embed_model_path or embedder._model.model._model_dir)


@pytest.fixture
def fresh_models(monkeypatch):
    """Models loaded by a test are its own, not the process's shared ones."""
    monkeypatch.setattr(loading_module, "_MODELS", {})
    monkeypatch.setattr(sessions, "_TABLES", {})


def _resident_kib(path_under: Path, suffix: str) -> int:
    """Resident KiB of this process's mappings of files under `path_under` ending in `suffix`."""
    total, counting = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            counting = len(head) > 5 and head[5].startswith(str(path_under)) \
                and head[5].endswith(suffix)
        elif counting and head[0] == "Rss:":
            total += int(head[1])
    return total


@pytest.mark.parametrize("which", ["memories", "queries"])
def test_each_model_holds_only_the_word_table_rows_of_the_tokens_it_read(model_dir, tmp_path,
                                                                        fresh_models, which):
    settings = Settings(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1)
    model = load_model(settings, for_queries=which == "queries")
    table = model.model.model._table
    assert table.rows_present == 0
    list(model.embed(TEXTS))
    tokens = {i for e in model.model.tokenizer.encode_batch(TEXTS) for i in e.ids}
    assert table.rows_present == len(tokens)
    assert _resident_kib(tmp_path, "-word-embeddings.npy") == 0  # the file is read, not mapped


def _mapped_files() -> list[str]:
    return [line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
            if len(line.split()) > 5]


def test_both_models_open_from_mapped_weights_and_share_one_word_table(model_dir, tmp_path,
                                                                       fresh_models):
    settings = Settings(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1)
    memories, queries = load_model(settings), load_model(settings, for_queries=True)
    for model in (memories, queries):
        assert Path(model.model.model._model_path).parent.name.endswith("-mapped")
    assert memories.model.model._table is queries.model.model._table  # one table, both read it
    weights = {p for p in _mapped_files() if p.startswith(str(tmp_path))
               and p.endswith(sessions.WEIGHTS_FILE)}
    assert len(weights) == 2, weights  # each model's other weights, mapped, not read


def test_mapped_sessions_give_the_shipped_models_vectors_bit_for_bit(model_dir, tmp_path,
                                                                    fresh_models):
    settings = Settings(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1,
                        query_threads=1)
    memories, queries = load_model(settings), load_model(settings, for_queries=True)
    shipped = TextEmbedding(settings.embed_model, specific_model_path=str(model_dir), threads=1)
    copy = TextEmbedding(settings.embed_model, threads=1,
                         specific_model_path=str(queries.model._model_dir))
    assert np.array_equal(np.array(list(memories.embed(TEXTS))),
                          np.array(list(shipped.embed(TEXTS))))
    assert np.array_equal(np.array(list(queries.query_embed(TEXTS))),
                          np.array(list(copy.query_embed(TEXTS))))


def test_the_mapped_copy_and_table_are_made_once(model_dir, tmp_path, fresh_models,
                                                 monkeypatch):
    settings = Settings(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1,
                        query_quantize="none")
    load_model(settings)
    made = sorted(p.name for p in tmp_path.iterdir())
    assert not [name for name in made if name.startswith(".building-")]

    def refuse(*_args, **_kwargs):
        raise AssertionError("the model file was read again although its copies exist")

    monkeypatch.setattr(sessions, "_extract", refuse)
    monkeypatch.setattr(loading_module, "_MODELS", {})
    monkeypatch.setattr(sessions, "_TABLES", {})
    import onnx

    monkeypatch.setattr(onnx, "load", refuse)
    load_model(settings)
    assert sorted(p.name for p in tmp_path.iterdir()) == made


def test_without_a_writable_cache_the_model_opens_as_shipped(model_dir, tmp_path,
                                                             fresh_models):
    blocked = tmp_path / "a-file"
    blocked.write_text("the cache dir cannot be made under a file")
    settings = Settings(embed_model_path=model_dir, model_cache_dir=blocked / "cache",
                        embed_threads=1, query_quantize="none")
    model = load_model(settings)
    assert Path(model.model.model._model_path) == model_dir / "model.onnx"
    shipped = TextEmbedding(settings.embed_model, specific_model_path=str(model_dir), threads=1)
    assert np.array_equal(np.array(list(model.embed(TEXTS))),
                          np.array(list(shipped.embed(TEXTS))))
