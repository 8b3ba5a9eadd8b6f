"""The embedding cache and ``[embedding] batch_size``: an int8 vector embedded beside other texts is cached apart."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from esbridge.cli import main
from esbridge.embeddings.cache import EmbeddingCache, model_of, text_key
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.onnx_runtime import OnnxEmbedder
from esbridge.embeddings.profiles import MINILM
from tests.support.models import require_stored

TEXTS = [
    "Tides rise twice a day.",
    "Photovoltaic cells turn sunlight into electricity, and an inverter turns their direct current into the "
    "alternating current of the grid, which a meter counts in both directions.",
    "Sourdough needs a starter.",
    "Offshore wind farms generate power from steady winds over open water, far from the coast.",
]


def test_an_int8_vector_of_a_batch_of_several_is_never_served_to_a_run_of_one_text_a_call(tmp_path: Path) -> None:
    require_stored(MINILM, "int8")
    batched = CachedEmbedder(OnnxEmbedder(MINILM, precision="int8", batch_size=4), EmbeddingCache(tmp_path))
    alone = CachedEmbedder(OnnxEmbedder(MINILM, precision="int8"), EmbeddingCache(tmp_path))
    again = CachedEmbedder(OnnxEmbedder(MINILM, precision="int8"), EmbeddingCache(tmp_path))
    try:
        beside_others = batched.embed(TEXTS)
        own = alone.embed(TEXTS)
        assert alone.stats.hits == 0
        fresh = [alone.embedder.embed([text])[0] for text in TEXTS]
        assert own == fresh  # each text's own vector
        assert beside_others != fresh  # one int8 scale for the batch: the neighbours count
        assert (again.embed(TEXTS), again.stats.hits) == (own, len(TEXTS))  # one text a call still hits the cache
        assert re.fullmatch(rf"{re.escape(MINILM)}\+onnx-int8@[0-9a-f]{{16}}/384", alone.identity)  # as before
        assert batched.identity == alone.identity + "+batch4" and model_of(batched.identity) == alone.identity
    finally:
        for model in (batched, alone, again):
            model.close()


def test_fp32_and_int8_of_one_text_a_call_share_the_cache_at_any_batch_size() -> None:
    # fp32 activations are not quantized: a text's vector is the same in any batch (docs/model-speed.md, "Batch size").
    require_stored(MINILM, "fp32")
    one, many = OnnxEmbedder(MINILM, precision="fp32"), OnnxEmbedder(MINILM, precision="fp32", batch_size=4)
    try:
        assert one.identity == many.identity
    finally:
        one.close()
        many.close()


def test_prune_other_models_keeps_the_configured_models_vectors_of_every_batch_size(tmp_path: Path) -> None:
    require_stored(MINILM, "int8")
    model = OnnxEmbedder(MINILM, precision="int8")
    identity = model.identity
    model.close()
    with EmbeddingCache(tmp_path) as store:
        store.put_many(identity, [(text_key("alone"), [0.5] * 384)])
        store.put_many(identity + "+batch32", [(text_key("batched"), [0.5] * 384)])
        store.put_many("replaced-model@0/384", [(text_key(f"old {n}"), [0.1] * 384) for n in range(3)])
    env = {
        "ESBRIDGE_EMBEDDING__CACHE_DIR": str(tmp_path),
        "ESBRIDGE_EMBEDDING__MODEL": MINILM,
        "ESBRIDGE_EMBEDDING__BACKEND": "onnx",
        "ESBRIDGE_EMBEDDING__PRECISION": "int8",
        "ESBRIDGE_EMBEDDING__BATCH_SIZE": "8",
    }
    pruned = CliRunner().invoke(main, ["cache", "prune", "--other-models", "--yes"], env=env)
    assert pruned.exit_code == 0, pruned.output
    assert "deleted 3 vectors of 1 model(s)" in pruned.output
    with EmbeddingCache(tmp_path) as store:
        assert store.models() == {identity: 1, identity + "+batch32": 1}
