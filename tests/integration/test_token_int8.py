"""The int8-token query model (embedding/token_int8.py): each token's activations quantized apart.

Real model, real onnxruntime. What the recipe exists for is closeness to fp32 at integer speed:
a per-tensor scale (onnxruntime's dynamic recipe) leaves the eval set's queries at cosine ~0.99,
this one at ~0.9986; and the copy must be the same bytes each time it is made, and a new copy
when its calibration texts change.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from fastembed import TextEmbedding

from memhub.embedding import quantized_model
from memhub.embedding.quantized_model import quantized_copy
from tests.support.retrieval import embedder

__all__ = ["embedder"]

ROOT = Path(__file__).resolve().parents[2]
QUERIES = [q["query"] for q in json.loads((ROOT / "tests/eval/queries.json").read_text())]


@pytest.fixture(scope="module")
def model_dir(embedder) -> Path:
    return Path(embedder.settings.embed_model_path or embedder._model.model._model_dir)


@pytest.fixture(scope="module")
def copies(model_dir, tmp_path_factory) -> dict[str, Path]:
    cache = tmp_path_factory.mktemp("models")
    return {recipe: quantized_copy(model_dir, "model.onnx", cache, recipe)
            for recipe in ("int8-token", "int8")}


def _vectors(directory: Path, texts: list[str]) -> np.ndarray:
    model = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2",
                          specific_model_path=str(directory), threads=1)
    return np.array(list(model.query_embed(texts)))


def test_query_vectors_stay_closer_to_fp32_than_with_one_scale_per_tensor(model_dir, copies):
    fp32 = _vectors(model_dir, QUERIES)
    cosine = {recipe: (_vectors(path, QUERIES) * fp32).sum(axis=1)
              for recipe, path in copies.items()}
    assert cosine["int8-token"].mean() > 0.997, cosine["int8-token"].mean()
    assert cosine["int8-token"].min() > 0.994, cosine["int8-token"].min()
    assert cosine["int8-token"].mean() > cosine["int8"].mean() + 0.003


def test_every_weight_matmul_runs_in_integers(copies):
    graph = onnx.load(copies["int8-token"] / "model.onnx").graph
    ops = Counter(node.op_type for node in graph.node)
    assert ops["MatMulInteger"] == 36  # Q, K, V, attention output, two feed-forward x 6 layers
    assert ops["MatMul"] == 12  # attention's own products, activation x activation, stay fp32
    # One row range per distinct input: Q, K and V share theirs.
    assert ops["ReduceMax"] == ops["ReduceMin"] == 24


def test_the_copy_is_the_same_bytes_each_time_and_new_when_its_calibration_changes(
        model_dir, copies, tmp_path, monkeypatch):
    again = quantized_copy(model_dir, "model.onnx", tmp_path / "again", "int8-token")
    assert again.name == copies["int8-token"].name
    assert (again / "model.onnx").read_bytes() == \
        (copies["int8-token"] / "model.onnx").read_bytes()
    changed = tmp_path / "calibration.txt"
    changed.write_text("a different calibration text\n")
    monkeypatch.setitem(quantized_model._INPUTS, "int8-token", (changed,))
    third = quantized_copy(model_dir, "model.onnx", tmp_path / "third", "int8-token")
    assert third.name != again.name
    assert (third / "model.onnx").read_bytes() != (again / "model.onnx").read_bytes()


def test_a_model_without_weight_matmuls_is_refused(tmp_path):
    from onnx import TensorProto, helper

    from memhub.embedding.token_int8 import quantize_per_token

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    with pytest.raises(ValueError, match="no weight matmul"):
        quantize_per_token(tmp_path / "model.onnx", tmp_path / "out.onnx", ["text"])
    assert not (tmp_path / "out.onnx").exists()
