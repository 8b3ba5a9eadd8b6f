"""Fixtures of the evaluation command tests: two tiny BEIR folders and a CLI runner with a hashing embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge.config.settings import EmbeddingSettings
from esbridge.embeddings.factory import EMBEDDERS
from tests.support.hashing import HashingEmbedder, beir_folder


@pytest.fixture
def energy(tmp_path: Path) -> Path:
    docs = {"solar": "Photovoltaic cells turn sunlight into electricity.", "wind": "Offshore wind farms make power."}
    queries = {"q1": ("sunlight electricity", "solar"), "q2": ("wind power", "wind")}
    return beir_folder(tmp_path / "energy", docs, queries)


@pytest.fixture
def baking(tmp_path: Path) -> Path:
    docs = {"bread": "A starter of flour and water leavens the dough.", "cake": "Sponge cake needs eggs and sugar."}
    queries = {"b1": ("sourdough starter", "bread"), "b2": ("sponge cake", "cake")}
    return beir_folder(tmp_path / "baking", docs, queries)


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    def hashing(settings: EmbeddingSettings) -> HashingEmbedder:
        return HashingEmbedder()

    monkeypatch.setitem(EMBEDDERS, "hashing", hashing)
    return CliRunner(env={"ESBRIDGE_EMBEDDING__PROVIDER": "hashing", "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path)})
