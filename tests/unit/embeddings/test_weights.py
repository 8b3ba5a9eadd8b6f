"""Weight digests: SHA-256 of the content, remembered by path, size and mtime, of the files a backend loads."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from esbridge.embeddings import weights
from esbridge.embeddings.weights import file_digest, torch_weight_files, weights_digest


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(weights, "_memory", {})
    monkeypatch.setenv(weights.HASH_CACHE_ENV, str(tmp_path / "hashes.json"))


def test_the_digest_is_the_sha256_of_the_content(tmp_path: Path) -> None:
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"weights" * 1000)
    assert file_digest(file) == hashlib.sha256(b"weights" * 1000).hexdigest()


def test_a_digest_is_read_from_the_cache_while_path_size_and_mtime_are_unchanged(tmp_path: Path) -> None:
    file = tmp_path / "model.onnx"
    file.write_bytes(b"one")
    cache = tmp_path / "hashes.json"
    real = file_digest(file)
    stored = json.loads(cache.read_text())
    assert list(stored.values()) == [real]
    # A planted digest proves the file is not read again; a new process starts with an empty memory.
    cache.write_text(json.dumps(dict.fromkeys(stored, "planted")))
    weights._memory.clear()
    assert file_digest(file) == "planted"
    os.utime(file, ns=(1, 1))  # rewritten: another mtime, hashed again
    weights._memory.clear()
    assert file_digest(file) == real


def test_a_damaged_cache_costs_a_rehash_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "hashes.json").write_text("{not json")
    file = tmp_path / "model.onnx"
    file.write_bytes(b"two")
    assert file_digest(file) == hashlib.sha256(b"two").hexdigest()


def test_the_digest_of_several_files_depends_on_their_names_and_contents(tmp_path: Path) -> None:
    first, second = tmp_path / "a.bin", tmp_path / "b.bin"
    first.write_bytes(b"1")
    second.write_bytes(b"2")
    both = weights_digest([first, second], tmp_path)
    assert both == weights_digest([first, second], tmp_path)
    assert both != weights_digest([second, first], tmp_path)
    second.write_bytes(b"3")
    assert both != weights_digest([first, second], tmp_path)


def test_torch_loads_safetensors_of_each_module_and_not_the_onnx_export_beside_them(tmp_path: Path) -> None:
    for name in ("model.safetensors", "pytorch_model.bin", "2_Dense/pytorch_model.bin", "onnx/model.onnx", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(name.encode())
    assert torch_weight_files(tmp_path) == [tmp_path / "model.safetensors", tmp_path / "2_Dense/pytorch_model.bin"]
