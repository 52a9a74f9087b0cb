"""`memhub-admin model import PATH` as an operator runs it, a separate process: what it refuses
(exit 1, MODEL_INVALID) leaves the data directory as it was; what it accepts is the real ONNX
export of all-MiniLM-L6-v2, copied into MEMHUB_DATA_DIR/models (the e2e test
tests/e2e/test_model_setup.py shows a server picking it up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memhub.embedding.model_files import MAX_MODEL_BYTES, REQUIRED_FILES
from tests.conftest import MODEL_PATH
from tests.support.server import ROOT


@pytest.fixture
def model_dir() -> Path:
    """The real ONNX export of all-MiniLM-L6-v2 (CI always has it)."""
    if MODEL_PATH and (Path(MODEL_PATH) / "model.onnx").is_file():
        return Path(MODEL_PATH)
    if os.environ.get("CI"):
        pytest.fail("CI must provide the embedding model (MEMHUB_EMBED_MODEL_PATH)")
    pytest.skip("the embedding model is not on this machine")


def model_import(data_dir: Path, source: Path, **env_extra: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env.update({"MEMHUB_DATA_DIR": str(data_dir), **env_extra})
    return subprocess.run(
        [str(Path(sys.executable).with_name("memhub-admin")), "model", "import", str(source),
         "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def refused_code(result) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    return json.loads(result.stdout)["error"]["code"]


def export_with(tmp_path: Path, model_dir: Path, **replaced: bytes | None) -> Path:
    """The real export (linked, not copied), with some files replaced or (None) left out."""
    source = tmp_path / "offered"
    source.mkdir()
    for name in REQUIRED_FILES:
        if name in replaced:
            if replaced[name] is not None:
                (source / name).write_bytes(replaced[name])
        else:
            (source / name).symlink_to(model_dir / name)
    return source


def nan_model() -> bytes:
    """A real ONNX model with the export's inputs whose every output is NaN."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["ids", "axis"], ["column"]),
         helper.make_node("Mul", ["column", "nan"], ["last_hidden_state"])],
        "nan",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", 384])],
        initializer=[helper.make_tensor("axis", TensorProto.INT64, [1], [2]),
                     helper.make_tensor("nan", TensorProto.FLOAT, [384], [float("nan")] * 384)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def untouched(data_dir: Path) -> bool:
    """Nothing of a refused import is left: no model, no staging directory."""
    models = data_dir / "models"
    return not models.exists() or list(models.iterdir()) == []


def test_a_directory_missing_a_file_is_refused_and_nothing_is_created(tmp_path, model_dir):
    source = export_with(tmp_path, model_dir, **{"tokenizer.json": None})
    assert refused_code(model_import(tmp_path / "data", source)) == "MODEL_INVALID"
    assert not (tmp_path / "data").exists()


def test_a_model_file_that_is_not_an_onnx_model_is_refused(tmp_path, model_dir):
    source = export_with(tmp_path, model_dir, **{"model.onnx": b"not an ONNX model"})
    assert refused_code(model_import(tmp_path / "data", source)) == "MODEL_INVALID"
    assert untouched(tmp_path / "data")


def test_a_model_of_another_dimension_is_refused(tmp_path, model_dir):
    result = model_import(tmp_path / "data", model_dir, MEMHUB_EMBED_DIM="768")
    assert refused_code(result) == "MODEL_INVALID"
    assert untouched(tmp_path / "data")


def test_a_model_whose_vectors_are_not_finite_is_refused(tmp_path, model_dir):
    source = export_with(tmp_path, model_dir, **{"model.onnx": nan_model()})
    assert refused_code(model_import(tmp_path / "data", source)) == "MODEL_INVALID"
    assert untouched(tmp_path / "data")


def test_a_model_file_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path,
                                                                                model_dir):
    source = export_with(tmp_path, model_dir, **{"model.onnx": None})
    os.mkfifo(source / "model.onnx")  # reading it would wait forever for a writer
    assert refused_code(model_import(tmp_path / "data", source)) == "MODEL_INVALID"
    assert not (tmp_path / "data").exists()


def test_a_file_past_its_bound_is_refused_before_anything_is_copied(tmp_path, model_dir):
    source = export_with(tmp_path, model_dir, **{"model.onnx": None})
    with open(source / "model.onnx", "wb") as sparse:  # no disk used: a hole
        sparse.truncate(MAX_MODEL_BYTES + 1)
    assert refused_code(model_import(tmp_path / "data", source)) == "MODEL_INVALID"
    assert not (tmp_path / "data").exists()


def test_a_refused_import_leaves_the_earlier_import_in_place(tmp_path, model_dir):
    data = tmp_path / "data"
    first = model_import(data, model_dir)
    assert first.returncode == 0, first.stderr
    imported = Path(json.loads(first.stdout)["imported_to"])
    source = export_with(tmp_path, model_dir, **{"model.onnx": b"not an ONNX model"})
    assert refused_code(model_import(data, source)) == "MODEL_INVALID"
    assert [p.name for p in (data / "models").iterdir()] == [imported.name]
    assert (imported / "model.onnx").read_bytes() == (model_dir / "model.onnx").read_bytes()
