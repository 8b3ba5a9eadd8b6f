"""Model profiles, prompts applied by the helpers, and the pure numerics of the ONNX embedder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

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
    folder_model,
    folder_pooling,
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


@pytest.mark.parametrize(
    ("parts", "known"),
    [
        (("bge-small-en-v1.5",), BGE_SMALL),  # huggingface-cli download --local-dir bge-small-en-v1.5
        (("BAAI--bge-small-en-v1.5",), BGE_SMALL),  # esbridge's model folder
        (("models--intfloat--e5-small-v2", "snapshots", "0123abcd"), E5_SMALL),  # a hub cache's snapshot
        (("All-MiniLM-L6-v2",), MINILM),
    ],
)
def test_a_local_folder_of_a_known_model_gets_its_profile(tmp_path: Path, parts: tuple[str, ...], known: str) -> None:
    folder = tmp_path.joinpath(*parts)
    folder.mkdir(parents=True)
    assert folder_model(str(folder)) == known
    assert profile_for(str(folder)) == profile_for(known)


def test_a_folder_of_another_name_or_a_missing_one_is_not_taken_for_a_known_model(tmp_path: Path) -> None:
    (tmp_path / "my-encoder").mkdir()
    assert folder_model(str(tmp_path / "my-encoder")) is None
    assert profile_for(str(tmp_path / "my-encoder")) == PLAIN
    assert folder_model(str(tmp_path / "missing" / "bge-small-en-v1.5")) is None


def _declares(folder: Path, **modes: bool) -> None:
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384, **modes}))


def test_a_folder_pools_as_its_sentence_transformers_config_declares_unless_settings_say(tmp_path: Path) -> None:
    unknown = tmp_path / "my-encoder"
    _declares(unknown, pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    assert folder_pooling(str(unknown)) == "cls"
    assert profile_for(str(unknown)) == ModelProfile(pooling="cls")
    assert profile_for(str(unknown), pooling="mean").pooling == "mean"
    renamed = tmp_path / "bge-small-en-v1.5"  # a known name holding a folder that declares otherwise
    _declares(renamed, pooling_mode_cls_token=False, pooling_mode_mean_tokens=True)
    assert profile_for(str(renamed)) == ModelProfile(pooling="mean", query_prompt=BGE_QUERY_INSTRUCTION, max_tokens=512)
    undeclared = tmp_path / "other"
    _declares(undeclared, pooling_mode_max_tokens=True)
    (tmp_path / "broken" / "1_Pooling").mkdir(parents=True)
    (tmp_path / "broken" / "1_Pooling" / "config.json").write_text("{not json")
    assert folder_pooling(str(undeclared)) is None
    assert folder_pooling(str(tmp_path / "broken")) is None
    assert profile_for(str(tmp_path / "broken")) == PLAIN
