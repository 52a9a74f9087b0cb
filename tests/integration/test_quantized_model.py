"""The 8-bit query copies of the embedding model (embedding/quantized_model.py,
MEMHUB_QUERY_QUANTIZE).

Real files and a real onnxruntime: each copy is made from the shipped fp32 export, reused
without quantizing again, and its vectors are close to fp32 ones (the default recipe, int8-block,
very close) while memories keep the shipped model and its label.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from fastembed import TextEmbedding

from memhub.config import Settings
from memhub.embedding import quantized_model
from memhub.embedding.embedder import Embedder
from memhub.embedding.loading import load_model
from memhub.embedding.quantized_model import RECIPES, quantized_copy
from tests.support.retrieval import embedder

__all__ = ["embedder"]

TEXTS = [
    "We replaced Redis with Postgres advisory locks for the job queue",
    "PAYSTREAM_WEBHOOK_SECRET rotates every 90 days",
    "How do tenants get isolated in the billing service?",
]


# Cosine to the fp32 query vector that each recipe must keep (measured: int8-block ~0.999,
# int8-token ~0.9986, int8 ~0.99; SciFact and the eval set rank with int8-block as with fp32,
# docs/performance.md).
MIN_COSINE = {"int8-block": 0.995, "int8-token": 0.995, "int8": 0.97}


def test_the_default_query_model_is_the_block_recipe():
    assert Settings().query_quantize == "int8-block" == RECIPES[0]


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_copy_is_made_once_beside_the_tokenizer_files(model_dir, tmp_path, monkeypatch,
                                                          recipe):
    made = quantized_copy(model_dir, "model.onnx", tmp_path, recipe)
    assert made.parent == tmp_path and made.name.endswith(f"-{recipe}")
    # Encoder weights in 8 bits: int8 also shrinks the word embeddings, the others keep them.
    shrink = 3 if recipe == "int8" else 1.4
    assert (made / "model.onnx").stat().st_size < (model_dir / "model.onnx").stat().st_size / shrink
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json"):
        assert (made / name).read_bytes() == (model_dir / name).read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".building-")]
    stamp = (made / "model.onnx").stat().st_mtime_ns

    def refuse(*_args, **_kwargs):
        raise AssertionError("quantized again although the copy exists")

    monkeypatch.setitem(quantized_model._QUANTIZERS, recipe, refuse)
    assert quantized_copy(model_dir, "model.onnx", tmp_path, recipe) == made
    assert (made / "model.onnx").stat().st_mtime_ns == stamp


def test_a_changed_source_gets_its_own_copy(model_dir, tmp_path):
    source = tmp_path / "src"
    shutil.copytree(model_dir, source)
    first = quantized_copy(source, "model.onnx", tmp_path / "cache")
    model = onnx.load(source / "model.onnx")  # another export of "the same" model
    model.doc_string = "re-exported"
    onnx.save(model, source / "model.onnx")
    second = quantized_copy(source, "model.onnx", tmp_path / "cache")
    assert second != first and (second / "model.onnx").is_file()


def test_an_unknown_recipe_is_refused(model_dir, tmp_path):
    with pytest.raises(ValueError, match="unknown quantization recipe"):
        quantized_copy(model_dir, "model.onnx", tmp_path, "int4")
    assert not tmp_path.exists() or not list(tmp_path.iterdir())


@pytest.mark.parametrize("recipe", RECIPES)
def test_queries_use_the_copy_and_memories_the_shipped_model(model_dir, tmp_path, recipe):
    base = dict(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1)
    fp32 = Embedder(Settings(**base, query_quantize="none"))
    int8 = Embedder(Settings(**base, query_quantize=recipe))
    for one in (fp32, int8):
        one.start()
        assert one.wait(120) and one.ready, one.status()
    assert int8.status()["query_model"] == recipe
    # One label either way: memories are embedded by the same model, nothing re-embeds.
    assert int8.model_name == fp32.model_name == int8.settings.embed_model
    assert np.array_equal(np.array(int8.embed_documents(TEXTS)),
                          np.array(fp32.embed_documents(TEXTS)))
    a = np.array([fp32.embed_query(t) for t in TEXTS])
    b = np.array([int8.embed_query(t) for t in TEXTS])
    cosines = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosines.min() > MIN_COSINE[recipe], cosines
    assert not np.allclose(a, b, atol=1e-4)  # really the 8-bit model, not the fp32 one again
    # Besides the recipe's copy, only what embedding/sessions.py maps and the marker of
    # embedding/prepare.py: no other recipe's.
    copies = [p.name for p in tmp_path.iterdir() if not p.name.endswith(
        ("-mapped", "-word-embeddings.npy", "-word-embeddings.name", "-prepared"))]
    assert copies == [name for name in copies if name.endswith(f"-{recipe}")]
    assert load_model(int8.settings) is load_model(fp32.settings)  # one fp32 session


def test_without_an_8bit_copy_queries_use_the_shipped_model(model_dir, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("the cache dir cannot be made under a file")
    base = dict(embed_model_path=model_dir, embed_threads=1)
    embedder = Embedder(Settings(**base, model_cache_dir=blocked / "cache"))
    shipped = Embedder(Settings(**base, query_quantize="none"))
    for one in (embedder, shipped):
        one.start()
        assert one.wait(120) and one.ready, one.status()
    assert embedder.status()["query_model"].startswith("as shipped: the int8-block copy failed")
    assert shipped.status()["query_model"].startswith("as shipped (MEMHUB_QUERY_QUANTIZE=none)")
    assert np.array_equal(embedder.embed_query(TEXTS[0]), shipped.embed_query(TEXTS[0]))


@pytest.fixture
def model_dir(embedder) -> Path:
    """The shipped model's directory. Through the shared `embedder` fixture, so these tests
    skip or fail exactly as every other model test (skip without a model, fail under CI)."""
    return Path(embedder.settings.embed_model_path or embedder._model.model._model_dir)


def test_the_query_session_uses_its_threads_asleep_between_runs(model_dir, tmp_path):
    """One session for the copy, opened by memhub: MEMHUB_QUERY_THREADS threads that do not
    spin between queries (a spinning thread takes the core PostgreSQL needs), the token limit
    kept, the same vectors as a session fastembed opens itself."""
    settings = Settings(embed_model_path=model_dir, model_cache_dir=tmp_path, embed_threads=1,
                        query_threads=2, embed_max_tokens=128)
    model = load_model(settings, for_queries=True)
    options = model.model.model.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert model.model.tokenizer.truncation["max_length"] == 128
    copy = Path(model.model._model_dir)
    assert copy.parent == tmp_path
    plain = TextEmbedding(settings.embed_model, specific_model_path=str(copy), threads=1)
    for text in TEXTS:
        a = next(iter(model.query_embed([text])))
        b = next(iter(plain.query_embed([text])))
        assert np.allclose(a, b, atol=1e-5)
