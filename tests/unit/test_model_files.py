"""The embedding model's files without a model or a database: where memhub keeps them, the
bound on a copy, and the test session's promise never to fetch one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memhub.config import Settings
from memhub.embedding.model_files import _copy_bounded, imported_dir, models_dir
from memhub.errors import ModelInvalid


def test_no_test_fetches_the_model_unless_it_says_so():
    """tests/conftest.py: every Settings a test builds, and every process it starts, is offline
    for memhub and for the Hugging Face client under it."""
    assert Settings().embed_offline is True
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_the_model_lives_in_the_data_directory(tmp_path):
    settings = Settings(data_dir=tmp_path)
    assert models_dir(settings) == tmp_path / "models"
    assert imported_dir(settings) == tmp_path / "models" / "all-MiniLM-L6-v2"


def test_a_copy_stops_at_its_bound(tmp_path: Path):
    """A file that grew past its bound between the check and the copy is refused."""
    source = tmp_path / "model.onnx"
    source.write_bytes(b"x" * (3 << 20))
    with pytest.raises(ModelInvalid) as refused:
        _copy_bounded(source, tmp_path / "copy", 1 << 20)
    assert refused.value.code == "MODEL_INVALID"
    _copy_bounded(source, tmp_path / "whole", 3 << 20)
    assert (tmp_path / "whole").read_bytes() == source.read_bytes()
