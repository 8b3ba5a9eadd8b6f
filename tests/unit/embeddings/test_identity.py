"""Model identities: which differences refuse a search, which are only noted, and how an index records one."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from esbridge.embeddings.identity import (
    META_KEY,
    ModelIdentity,
    compare,
    identity_of,
    mismatch_error,
    recorded_identity,
    with_identity,
)
from esbridge.embeddings.profiles import BGE_QUERY_INSTRUCTION, ModelProfile
from esbridge.errors import ConfigError, ModelMismatch

MINILM_TORCH = ModelIdentity(
    name="sentence-transformers/all-MiniLM-L6-v2",
    weights="a" * 64,
    dimension=384,
    pooling="mean",
    normalize=True,
    backend="torch",
    precision="fp32",
    max_tokens=256,
)
MINILM_ONNX = MINILM_TORCH.model_copy(update={"weights": "b" * 64, "backend": "onnx"})
MINILM_INT8 = MINILM_ONNX.model_copy(update={"weights": "c" * 64, "precision": "int8"})
BGE = ModelIdentity(
    name="BAAI/bge-small-en-v1.5",
    weights="d" * 64,
    dimension=384,
    pooling="cls",
    normalize=True,
    query_prompt=BGE_QUERY_INSTRUCTION,
    backend="onnx",
    precision="int8",
)


def test_the_same_identity_is_compatible_with_nothing_to_note() -> None:
    assert compare(MINILM_TORCH, MINILM_TORCH.model_copy()).compatible
    assert compare(MINILM_TORCH, MINILM_TORCH.model_copy()).notes == ()


def test_torch_and_onnx_files_of_one_model_are_compatible_and_the_backend_is_noted() -> None:
    verdict = compare(MINILM_TORCH, MINILM_ONNX)
    assert verdict.compatible
    assert verdict.notes == ("backend torch vs onnx",)


def test_int8_of_the_same_model_is_compatible_and_the_precision_is_noted() -> None:
    verdict = compare(MINILM_TORCH, MINILM_INT8)
    assert verdict.compatible
    assert verdict.notes == ("backend torch vs onnx", "precision fp32 vs int8")


def test_a_short_alias_names_the_same_model_as_its_hub_id() -> None:
    aliased = MINILM_ONNX.model_copy(update={"name": "all-minilm-l6-v2"})
    assert compare(MINILM_TORCH, aliased).compatible


def test_another_model_is_refused_with_every_difference_named() -> None:
    verdict = compare(MINILM_TORCH, BGE)
    assert not verdict.compatible
    assert verdict.differences == (
        "model sentence-transformers/all-MiniLM-L6-v2 vs BAAI/bge-small-en-v1.5",
        "pooling 'mean' vs 'cls'",
        f"query prompt '' vs {BGE_QUERY_INSTRUCTION!r}",
    )


def test_equal_weights_are_the_same_model_whatever_the_folder_is_called() -> None:
    copied = MINILM_TORCH.model_copy(update={"name": "/models/my-copy"})
    assert compare(MINILM_TORCH, copied).compatible


def test_other_weights_under_the_same_name_backend_and_precision_are_refused() -> None:
    retrained = MINILM_TORCH.model_copy(update={"weights": "e" * 64})
    assert compare(MINILM_TORCH, retrained).differences == (f"weights sha256 {'a' * 12} vs {'e' * 12}",)


def test_another_hub_revision_is_refused_when_the_weights_were_not_hashed() -> None:
    old = MINILM_TORCH.model_copy(update={"weights": None, "revision": "1" * 40})
    new = old.model_copy(update={"revision": "2" * 40})
    assert compare(old, new).differences == (f"revision {'1' * 12} vs {'2' * 12}",)


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({"pooling": "cls"}, "pooling 'mean' vs 'cls'"),
        ({"normalize": False}, "normalization True vs False"),
        ({"query_prompt": "query: "}, "query prompt '' vs 'query: '"),
        ({"passage_prompt": "passage: "}, "passage prompt '' vs 'passage: '"),
        ({"dimension": 768}, "dimension 384 vs 768"),
    ],
)
def test_the_same_weights_embedded_differently_are_refused(change: dict[str, object], difference: str) -> None:
    assert compare(MINILM_TORCH, MINILM_TORCH.model_copy(update=change)).differences == (difference,)


def test_the_token_limit_is_recorded_but_not_compared() -> None:
    assert compare(MINILM_TORCH, MINILM_TORCH.model_copy(update={"max_tokens": 512})).compatible


def test_an_index_records_its_model_in_meta_and_reads_it_back() -> None:
    meta = with_identity({"esbridge_schema": 1}, BGE)
    assert meta["esbridge_schema"] == 1
    assert recorded_identity({"_meta": meta, "properties": {}}, "docs") == BGE


def test_an_index_without_a_record_records_no_model() -> None:
    assert recorded_identity({"properties": {}}, "docs") is None
    assert recorded_identity({"_meta": {"esbridge_schema": 1}}, "docs") is None


def test_a_record_from_a_newer_esbridge_with_more_fields_still_reads() -> None:
    meta = {META_KEY: {**BGE.to_meta(), "training_data": "msmarco"}}
    assert recorded_identity({"_meta": meta}, "docs") == BGE


def test_a_malformed_record_is_an_error_naming_the_index_and_the_field() -> None:
    with pytest.raises(ConfigError, match=r"index docs records its model .* malformed \(dimension: "):
        recorded_identity({"_meta": {META_KEY: {**BGE.to_meta(), "dimension": "wide"}}}, "docs")


def test_the_refusal_names_both_models_and_the_ways_out() -> None:
    error = mismatch_error("docs", MINILM_TORCH, BGE, compare(MINILM_TORCH, BGE))
    assert isinstance(error, ModelMismatch)
    message = str(error)
    assert "index docs holds vectors made by sentence-transformers/all-MiniLM-L6-v2 (torch fp32" in message
    assert "embed the query with BAAI/bge-small-en-v1.5 (onnx int8" in message
    assert "--allow-model-mismatch" in message
    assert error.index_model == MINILM_TORCH.describe()
    assert error.query_model == BGE.describe()


def test_describe_says_what_shapes_the_vectors() -> None:
    assert BGE.describe() == (
        f"BAAI/bge-small-en-v1.5 (onnx int8, weights sha256 {'d' * 12}, 384-d, cls pooling, normalized, "
        f"query prompt {BGE_QUERY_INSTRUCTION!r}, no passage prompt)"
    )


class PromptedEmbedder:
    """An embedder that says nothing about its files: its identity comes from the interface."""

    name = identity = "prompted-8"
    dimension = 8
    max_tokens = 128
    prompts = ModelProfile(pooling="cls", query_prompt="q: ", passage_prompt="p: ")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 7 for _ in texts]


def test_an_embedder_without_files_is_identified_by_name_dimension_and_profile() -> None:
    identity = identity_of(PromptedEmbedder())
    assert identity == ModelIdentity(
        name="prompted-8",
        dimension=8,
        pooling="cls",
        normalize=True,
        query_prompt="q: ",
        passage_prompt="p: ",
        backend="unknown",
        max_tokens=128,
    )
