"""A hub model that is not on this machine while HF_HUB_OFFLINE is set: the error names the model and says how
to get it. On torch it said only "couldn't connect ... check your internet connection", which the network was
not the cause of."""

from __future__ import annotations

import pytest

from esbridge.config.embedding import Backend, EmbeddingSettings
from esbridge.config.pipeline import RerankSettings
from esbridge.embeddings.factory import load_model
from esbridge.errors import ModelUnavailable
from esbridge.query.rerank import cross_encoder

MISSING = "esbridge-tests/no-such-model"
HINT = r".*HF_HUB_OFFLINE is set.*download it.*or name a local folder"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ESBRIDGE_MODELS_DIR", str(tmp_path_factory.mktemp("models")))


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_the_embedding_model_error_names_it_and_says_how_to_get_it(backend: Backend) -> None:
    if backend == "torch":
        pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    with pytest.raises(ModelUnavailable, match=rf"(?s)^embedding model '{MISSING}': {HINT}"):
        load_model(EmbeddingSettings(model=MISSING, backend=backend))


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_the_re_ranker_error_names_it_and_says_how_to_get_it(backend: Backend) -> None:
    if backend == "torch":
        pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    with pytest.raises(ModelUnavailable, match=rf"(?s)^re-ranker '{MISSING}': {HINT}"):
        cross_encoder(RerankSettings(enabled=True, model=MISSING, backend=backend))


def test_without_offline_mode_no_hint_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from esbridge.embeddings.resolve import with_offline_hint

    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert with_offline_hint("no connection.") == "no connection."


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_a_re_ranker_named_by_its_alias_is_looked_for_by_its_hub_id(backend: Backend) -> None:
    # On torch the alias itself was asked of the hub, which has no such repository.
    if backend == "torch":
        pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    with pytest.raises(ModelUnavailable, match=r"^re-ranker 'cross-encoder/ms-marco-MiniLM-L-12-v2': "):
        cross_encoder(RerankSettings(enabled=True, model="ms-marco-minilm-l-12-v2", backend=backend))
