"""Model profiles, prompts applied by the helpers, and the pure numerics of the ONNX embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from esbridge.config.embedding import EmbeddingSettings
from esbridge.embeddings.base import embed_passages, embed_queries, model_profile, start_embedding
from esbridge.embeddings.cache import EmbeddingCache
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.embeddings.onnx_runtime import length_order, normalize_rows, pool, settings_profile
from esbridge.embeddings.profiles import (
    BGE_QUERY_INSTRUCTION,
    BGE_SMALL,
    E5_SMALL,
    MINILM,
    PLAIN,
    ModelProfile,
    canonical_name,
    profile_for,
)


class EchoEmbedder:
    """Remembers the texts it was given; its vector is the text's length."""

    name = "echo"
    identity = "echo@1/1"
    dimension = 1
    max_tokens = 512

    def __init__(self, profile: ModelProfile) -> None:
        self.prompts = profile
        self.seen: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return [[float(len(text))] for text in texts]


def test_known_models_have_their_papers_prompts_and_pooling() -> None:
    assert profile_for(E5_SMALL).query("x") == "query: x"
    assert profile_for(E5_SMALL).passage("x") == "passage: x"
    assert profile_for(BGE_SMALL).query("x") == BGE_QUERY_INSTRUCTION + "x"
    assert profile_for(BGE_SMALL).passage("x") == "x"
    assert profile_for(BGE_SMALL).pooling == "cls"
    assert profile_for(MINILM) == ModelProfile(pooling="mean", max_tokens=256)


def test_names_are_found_by_alias_and_case() -> None:
    assert canonical_name("BAAI/BGE-small-en-v1.5") == BGE_SMALL
    assert canonical_name("e5-small") == E5_SMALL
    assert canonical_name("all-MiniLM-L6-v2") == MINILM
    assert canonical_name("someone/else") is None
    assert profile_for("someone/else") == PLAIN


def test_settings_override_one_field_and_keep_the_rest() -> None:
    profile = settings_profile(EmbeddingSettings(model="e5-small-v2", query_prompt="", max_tokens=128))
    assert profile == ModelProfile(pooling="mean", query_prompt="", passage_prompt="passage: ", max_tokens=128)


def test_queries_and_passages_get_their_own_prompt() -> None:
    model = EchoEmbedder(profile_for(E5_SMALL))
    assert embed_passages(model, ["ab"]) == [[float(len("passage: ab"))]]
    assert embed_queries(model, ["ab"]) == [[float(len("query: ab"))]]

    async def search() -> list[list[float]]:
        return await start_embedding(model, ["q"])

    assert asyncio.run(search()) == [[float(len("query: q"))]]
    assert model.seen == ["passage: ab", "query: ab", "query: q"]


def test_the_cache_keeps_query_and_passage_vectors_apart(tmp_path: object) -> None:
    model = EchoEmbedder(profile_for(E5_SMALL))
    with CachedEmbedder(model, EmbeddingCache(tmp_path)) as cached:  # type: ignore[arg-type]
        assert model_profile(cached) == profile_for(E5_SMALL)
        assert embed_queries(cached, ["same"]) != embed_passages(cached, ["same"])
        assert embed_queries(cached, ["same"]) == [[float(len("query: same"))]]
        assert cached.stats.misses == 2


def test_an_embedder_without_a_profile_gets_no_prompts() -> None:
    class Bare(EchoEmbedder):
        prompts = None  # type: ignore[assignment]

    model = Bare(PLAIN)
    assert model_profile(model) is PLAIN
    assert embed_queries(model, ["q"]) == [[1.0]]


def test_mean_pooling_averages_only_real_tokens() -> None:
    states = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]], dtype=np.int64)
    assert pool(states, mask, "mean").tolist() == [[2.0, 3.0]]
    assert pool(states, mask, "cls").tolist() == [[1.0, 2.0]]


def test_pooled_outputs_pass_through_and_rows_become_unit_length() -> None:
    pooled = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    assert pool(pooled, np.ones((2, 1), dtype=np.int64), "mean") is pooled
    assert normalize_rows(pooled).ravel().tolist() == pytest.approx([0.6, 0.8, 0.0, 0.0])


def test_length_order_is_longest_first_and_stable() -> None:
    assert length_order([3, 9, 3, 5]) == [1, 3, 0, 2]
    assert length_order([]) == []
