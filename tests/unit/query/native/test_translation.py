"""esbridge fusion settings -> the engines' terms, and what is refused (hand-checked values)."""

from __future__ import annotations

from typing import Any

import pytest

from esbridge.errors import ConfigError
from esbridge.query.native.fusion import NativeFusion, native_fusion

BOTH = ["bm25", "knn"]


def test_rrf_keeps_its_constant_and_weights() -> None:
    fusion = native_fusion("rrf", {"bm25": 1.0, "knn": 3.0}, {"k": 20}, BOTH)
    assert fusion == NativeFusion("rrf", (1.0, 3.0), rank_constant=20)
    assert fusion.shares == (0.25, 0.75)  # OpenSearch: weights in [0, 1] summing to 1
    assert fusion.client_params() == {"k": 20}


def test_shares_sum_to_exactly_one_even_for_awkward_weights() -> None:
    fusion = native_fusion("linear", {"bm25": 1.0, "knn": 2.0}, {}, ["knn", "bm25"])
    lexical, semantic = fusion.shares
    assert (lexical, semantic) == (0.333333, 0.666667)
    assert lexical + semantic == 1.0


def test_linear_defaults_are_min_max_sum() -> None:
    fusion = native_fusion("linear", {}, {}, BOTH)
    assert (fusion.normalization, fusion.combination, fusion.min_max_floor, fusion.weights) == (
        "min_max",
        "sum",
        0.0,
        (1.0, 1.0),
    )


@pytest.mark.parametrize(
    ("method", "params", "retrievers", "weights", "message"),
    [
        ("dbsf", {}, BOTH, {}, "'dbsf' has no server-side equivalent"),
        ("adaptive", {}, BOTH, {}, "'adaptive' has no server-side equivalent"),
        ("rrf", {"k": 60.5}, BOTH, {}, "whole rank constant"),
        ("rrf", {"k": 0}, BOTH, {}, "whole rank constant"),
        ("rrf", {"k": 20000}, BOTH, {}, "whole rank constant"),
        ("rrf", {"window": 3}, BOTH, {}, "cannot express"),
        ("linear", {"normalization": "z_score"}, BOTH, {}, "'z_score' has no server-side equivalent"),
        ("linear", {"normalization": "distribution"}, BOTH, {}, "no server-side equivalent"),
        ("linear", {"combination": "geometric_mean"}, BOTH, {}, "not one of sum, arithmetic_mean"),
        ("linear", {"normalization": "l2", "min_max_floor": 0.001}, BOTH, {}, "min_max normalization only"),
        ("rrf", {}, ["bm25"], {}, "exactly the 'bm25' and 'knn' retrievers"),
        ("rrf", {}, ["bm25", "knn", "sparse"], {}, "exactly the 'bm25' and 'knn' retrievers"),
        ("rrf", {}, BOTH, {"bm25": 0.0, "knn": 0.0}, "positive sum"),
        ("rrf", {}, BOTH, {"title": 1.0}, "does not run: ['title']"),
    ],
)
def test_what_the_engines_cannot_express_is_refused_with_the_reason(
    method: str, params: dict[str, Any], retrievers: list[str], weights: dict[str, float], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        native_fusion(method, weights, params, retrievers)
