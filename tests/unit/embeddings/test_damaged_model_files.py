"""An ONNX model folder with a damaged file: ModelUnavailable naming the file that cannot be read, so the operator
knows which one to fetch again (a tokenizer.json that is not JSON was reported as the ONNX weights' fault)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from esbridge.embeddings.model_store import store_folder
from esbridge.embeddings.onnx_runtime import OnnxEmbedder
from esbridge.embeddings.profiles import MINILM
from esbridge.errors import ModelUnavailable
from tests.support.models import require_stored


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    require_stored(MINILM, "int8")
    copy = tmp_path / "minilm"
    shutil.copytree(store_folder(MINILM), copy, ignore=shutil.ignore_patterns("model.onnx"))
    return copy


def test_a_tokenizer_file_that_is_not_json_is_named(folder: Path) -> None:
    (folder / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelUnavailable, match=r"cannot load .*minilm/tokenizer\.json: ") as refused:
        OnnxEmbedder(str(folder), precision="int8")
    assert "model_int8.onnx" not in str(refused.value)


def test_onnx_weights_cut_short_are_named(folder: Path) -> None:
    weights = folder / "model_int8.onnx"
    weights.write_bytes(weights.read_bytes()[:5000])
    with pytest.raises(ModelUnavailable, match=r"cannot load .*minilm/model_int8\.onnx: .*Protobuf"):
        OnnxEmbedder(str(folder), precision="int8")
