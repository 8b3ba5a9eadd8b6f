from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from esbridge.embeddings import CachedEmbedder, CacheStats, Embedder, EmbeddingCache
from esbridge.errors import EmbeddingError


class CountingEmbedder:
    """A stand-in model: the vector of a text is [len(text), 1.0]; every call is recorded."""

    def __init__(self, identity: str = "fake@1/2", fail_on_call: int | None = None) -> None:
        self._identity = identity
        self.calls: list[list[str]] = []
        self.fail_on_call = fail_on_call
        self.wrong_shape = False

    @property
    def name(self) -> str:
        return "fake"

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimension(self) -> int:
        return 2

    @property
    def max_tokens(self) -> int:
        return 8

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.fail_on_call == len(self.calls):
            raise KeyboardInterrupt  # as if the user stopped the run
        if self.wrong_shape:
            return [[1.0] for _ in texts]
        return [[float(len(text)), 1.0] for text in texts]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[EmbeddingCache]:
    with EmbeddingCache(tmp_path) as cache:
        yield cache


def test_the_wrapper_and_the_fake_are_embedders(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache)
    assert isinstance(model, Embedder)
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.identity, cached.dimension, cached.max_tokens) == ("fake", "fake@1/2", 2, 8)
    assert cached.count_tokens("a b c") == 3


def test_a_second_call_embeds_nothing(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache)
    first = cached.embed(["a", "bb", "ccc"])
    second = cached.embed(["ccc", "a", "bb"])
    assert first == [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]
    assert second == [[3.0, 1.0], [1.0, 1.0], [2.0, 1.0]]  # input order, not storage order
    assert model.calls == [["a", "bb", "ccc"]]
    assert cached.stats == CacheStats(hits=3, misses=3)


def test_a_new_process_reuses_the_file(tmp_path: Path) -> None:
    with CachedEmbedder(CountingEmbedder(), EmbeddingCache(tmp_path)) as cached:
        cached.embed(["a", "bb"])
    model = CountingEmbedder()
    with CachedEmbedder(model, EmbeddingCache(tmp_path)) as cached:
        assert cached.embed(["bb", "new"]) == [[2.0, 1.0], [3.0, 1.0]]
        assert cached.stats == CacheStats(hits=1, misses=1)
    assert model.calls == [["new"]]


def test_repeats_within_a_call_are_embedded_once(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache)
    vectors = cached.embed(["x", "yy", "x", "x"])
    assert vectors == [[1.0, 1.0], [2.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    assert model.calls == [["x", "yy"]]
    assert cached.stats == CacheStats(hits=2, misses=2)
    vectors[0][0] = 99.0  # callers get their own lists
    assert vectors[2] == [1.0, 1.0]


def test_another_model_identity_does_not_share_vectors(cache: EmbeddingCache) -> None:
    CachedEmbedder(CountingEmbedder("fake@1/2"), cache).embed(["a"])
    other = CountingEmbedder("fake@2/2")
    CachedEmbedder(other, cache).embed(["a"])
    assert other.calls == [["a"]]
    assert cache.count() == 2


def test_misses_are_embedded_and_stored_in_batches(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache, batch_size=2)
    cached.embed(["hit"])
    model.calls.clear()
    cached.embed(["a", "hit", "bb", "ccc", "dddd", "eeeee"])
    assert model.calls == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]


def test_an_interrupted_run_keeps_finished_batches(cache: EmbeddingCache) -> None:
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    with pytest.raises(KeyboardInterrupt):
        CachedEmbedder(CountingEmbedder(fail_on_call=2), cache, batch_size=2).embed(texts)
    assert cache.count() == 2  # the first batch was committed, the second never written

    model = CountingEmbedder()
    cached = CachedEmbedder(model, cache, batch_size=2)
    assert cached.embed(texts) == [[float(len(text)), 1.0] for text in texts]
    assert model.calls == [["ccc", "dddd"], ["eeeee"]]
    assert cached.stats == CacheStats(hits=2, misses=3)


def test_empty_input_calls_nothing(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    assert CachedEmbedder(model, cache).embed([]) == []
    assert model.calls == []


def test_vectors_of_the_wrong_dimension_are_rejected_not_stored(cache: EmbeddingCache) -> None:
    model = CountingEmbedder()
    model.wrong_shape = True
    with pytest.raises(EmbeddingError, match="embedding model 'fake': returned a 1-dimensional vector, expected 2"):
        CachedEmbedder(model, cache).embed(["a"])
    assert cache.count() == 0


def test_reset_stats(cache: EmbeddingCache) -> None:
    cached = CachedEmbedder(CountingEmbedder(), cache)
    cached.embed(["a"])
    cached.reset_stats()
    assert cached.stats == CacheStats()


def test_batch_size_must_be_positive(cache: EmbeddingCache) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        CachedEmbedder(CountingEmbedder(), cache, batch_size=0)


def test_a_cache_another_process_keeps_locked_costs_only_the_reuse(tmp_path: Path) -> None:
    import sqlite3

    from esbridge.errors import EsbridgeWarning

    with EmbeddingCache(tmp_path) as created:
        holder = sqlite3.connect(created.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing to it (a long `esbridge cache prune`)
    model = CountingEmbedder()
    try:
        with CachedEmbedder(model, EmbeddingCache(tmp_path, timeout_s=0.05), batch_size=1) as cached:
            with pytest.warns(
                EsbridgeWarning, match=r"database is locked; the vectors are used all the same"
            ) as caught:
                vectors = cached.embed(["a", "bb", "ccc"])
            assert vectors == [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]
            assert len(caught) == 1, "warned once, and no more waits for the lock"
            assert cached.stats == CacheStats(hits=0, misses=3)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with EmbeddingCache(tmp_path) as cache:
        assert cache.count() == 0
