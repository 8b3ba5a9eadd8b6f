"""A model folder or an embedding cache named in the settings is named escaped in errors: a line break, an escape
sequence or a right-to-left override in its name neither splits the line nor drives the terminal nor shows the name
reversed, and bytes that are not UTF-8 are shown as ``\\xNN``."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.model_store import locate_onnx
from esbridge.embeddings.onnx_runtime import OnnxSession
from esbridge.embeddings.resolve import resolve_model
from esbridge.errors import EmbeddingError, ModelUnavailable

NAMES = [
    pytest.param("model\nerror: forged\x1b[2J\u202e", "model\\u000aerror: forged\\u001b[2J\\u202e", id="controls"),
    pytest.param(os.fsdecode(b"model\xff"), "model\\xff", id="not-utf-8"),
]


def escaped(text: str, raw: str, shown: str) -> str:
    assert shown in text
    assert raw not in text and "\x1b" not in text and "\u202e" not in text
    return text


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_model_folder_that_does_not_exist_is_named_escaped(tmp_path: Path, name: str, shown: str) -> None:
    for find in (resolve_model, lambda model: locate_onnx(model, "fp32")):
        with pytest.raises(ModelUnavailable) as refused:
            find(str(tmp_path / name))
        assert f": model folder {tmp_path}/{shown} does not exist" in escaped(str(refused.value), name, shown)


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_model_folder_without_weights_or_a_tokenizer_is_named_escaped(tmp_path: Path, name: str, shown: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(b"")
    with pytest.raises(ModelUnavailable) as refused:
        locate_onnx(str(folder), "fp32")
    assert f": no fp32 ONNX weights in {tmp_path}/{shown} (looked for " in escaped(str(refused.value), name, shown)
    (folder / "tokenizer.json").unlink()
    (folder / "model.onnx").write_bytes(b"")
    with pytest.raises(ModelUnavailable) as refused:
        locate_onnx(str(folder), "fp32")
    assert str(refused.value).endswith(f": no tokenizer.json in {tmp_path}/{shown}")
    escaped(str(refused.value), name, shown)


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_an_unusable_embedding_cache_is_named_escaped(tmp_path: Path, name: str, shown: str) -> None:
    cache = tmp_path / name
    cache.mkdir()
    (cache / "embeddings.sqlite3").write_bytes(b"not a database, " * 64)
    (tmp_path / "esbridge.toml").touch()
    runner = CliRunner(env={"ESBRIDGE_EMBEDDING__CACHE_DIR": str(cache)})
    result = runner.invoke(main, ["cache", "stats", "--config", str(tmp_path / "esbridge.toml")])
    assert result.exit_code == 1, result.output
    message = escaped(result.stderr, name, shown)
    assert message.startswith(f"Error: the embedding cache {tmp_path}/{shown}/embeddings.sqlite3 is unusable: ")


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    pytest.importorskip("onnxruntime")
    return tmp_path


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_tokenizer_that_cannot_be_loaded_is_named_escaped(model_folder: Path, name: str, shown: str) -> None:
    folder = model_folder / name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    (folder / "tokenizer.json").write_text("{", encoding="utf-8")
    with pytest.raises(ModelUnavailable) as refused:
        OnnxSession(locate_onnx(str(folder), "fp32"), max_tokens=8, threads=1, purpose="a test")
    assert f": cannot load {model_folder}/{shown}/tokenizer.json: " in escaped(str(refused.value), name, shown)


# The tokenizers library opens no file whose name is not UTF-8, so only the tokenizer is reached there.
@pytest.mark.parametrize(("name", "shown"), NAMES[:1])
def test_onnx_weights_that_cannot_be_loaded_are_named_escaped_with_the_reason(
    model_folder: Path, name: str, shown: str
) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    folder = model_folder / name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    vocabulary = tokenizers.models.WordLevel({"[UNK]": 0, "pump": 1}, unk_token="[UNK]")
    (folder / "tokenizer.json").write_text(tokenizers.Tokenizer(vocabulary).to_str(), encoding="utf-8")
    with pytest.raises(ModelUnavailable) as refused:
        OnnxSession(locate_onnx(str(folder), "fp32"), max_tokens=8, threads=1, purpose="a test")
    message = escaped(str(refused.value), name, shown)
    assert f": cannot load {model_folder}/{shown}/model.onnx: " in message
    assert f"{model_folder}/{shown}/model.onnx failed:" in message, "the library's own naming of it is escaped too"


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_an_embedding_cache_that_cannot_be_opened_or_is_too_new_is_named_escaped(
    tmp_path: Path, name: str, shown: str
) -> None:
    (tmp_path / name).write_bytes(b"")  # a file where the cache's folder would be
    with pytest.raises(EmbeddingError) as refused:
        EmbeddingCache(tmp_path / name)
    assert str(refused.value).startswith(f"cannot open the embedding cache {tmp_path}/{shown}/embeddings.sqlite3: ")
    escaped(str(refused.value), name, shown)
    (tmp_path / name).unlink()
    (tmp_path / name).mkdir()
    with sqlite3.connect(tmp_path / name / "embeddings.sqlite3") as database:
        database.execute("PRAGMA user_version = 99")
    database.close()
    with pytest.raises(EmbeddingError) as refused:
        EmbeddingCache(tmp_path / name)
    message = escaped(str(refused.value), name, shown)
    assert message.startswith(f"the embedding cache {tmp_path}/{shown}/embeddings.sqlite3 has schema version 99, ")
