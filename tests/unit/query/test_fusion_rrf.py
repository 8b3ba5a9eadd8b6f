from __future__ import annotations

import math

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import rrf
from esbridge.query.types import Runs

RUNS: Runs = {
    "bm25": {"a": 10.0, "b": 6.0, "c": 2.0},
    "knn": {"b": 0.9, "d": 0.8, "a": 0.5},
}


def test_unweighted_rrf_with_k_60() -> None:
    # a: bm25 rank 1, knn rank 3 -> 1/61 + 1/63 = 0.0163934 + 0.0158730 = 0.0322665
    # b: bm25 rank 2, knn rank 1 -> 1/62 + 1/61 = 0.0161290 + 0.0163934 = 0.0325225
    # c: bm25 rank 3             -> 1/63 = 0.0158730
    # d: knn rank 2              -> 1/62 = 0.0161290
    result = rrf(RUNS)
    assert result.scores == pytest.approx({"b": 1 / 62 + 1 / 61, "a": 1 / 61 + 1 / 63, "d": 1 / 62, "c": 1 / 63})
    assert list(result.scores) == ["b", "a", "d", "c"]
    assert result.contributions["a"] == pytest.approx({"bm25": 1 / 61, "knn": 1 / 63})
    assert result.contributions["d"] == pytest.approx({"knn": 1 / 62})


def test_weights_multiply_each_retrievers_contribution() -> None:
    # a: 2/61 + 1/63 = 0.0327869 + 0.0158730 = 0.0486599
    # b: 2/62 + 1/61 = 0.0322581 + 0.0163934 = 0.0486515
    # c: 2/63 = 0.0317460;  d: 1/62 = 0.0161290
    result = rrf(RUNS, weights={"bm25": 2.0})
    assert result.scores == pytest.approx({"a": 2 / 61 + 1 / 63, "b": 2 / 62 + 1 / 61, "c": 2 / 63, "d": 1 / 62})
    assert list(result.scores) == ["a", "b", "c", "d"]
    assert result.contributions["c"] == pytest.approx({"bm25": 2 / 63})


def test_small_k_favours_top_ranks() -> None:
    # k = 1: a 1/2 + 1/4 = 0.75, b 1/3 + 1/2 = 0.8333, c 1/4, d 1/3
    result = rrf(RUNS, k=1)
    assert result.scores == pytest.approx({"b": 1 / 3 + 1 / 2, "a": 0.75, "d": 1 / 3, "c": 0.25})


def test_ranks_come_from_run_order_not_scores() -> None:
    # x is listed first, so it has rank 1 although its score is lower
    result = rrf({"bm25": {"x": 1.0, "y": 5.0}})
    assert result.scores == pytest.approx({"x": 1 / 61, "y": 1 / 62})
    assert list(result.scores) == ["x", "y"]


def test_ties_are_broken_by_id() -> None:
    result = rrf({"bm25": {"b": 3.0}, "knn": {"a": 0.2}})
    assert list(result.scores) == ["a", "b"]
    assert result.scores["a"] == result.scores["b"] == 1 / 61


def test_zero_weight_keeps_the_documents_at_score_zero() -> None:
    # as Elasticsearch's weighted rrf: the documents stay, the retriever adds nothing
    result = rrf(RUNS, weights={"knn": 0.0})
    assert result.scores == pytest.approx({"a": 1 / 61, "b": 1 / 62, "c": 1 / 63, "d": 0.0})
    assert result.contributions["d"] == {"knn": 0.0}


def test_contributions_sum_to_the_score() -> None:
    result = rrf(RUNS, weights={"bm25": 0.3, "knn": 0.7}, k=10)
    for doc_id, score in result.scores.items():
        assert math.fsum(result.contributions[doc_id].values()) == score


def test_empty_input() -> None:
    assert rrf({}).scores == {}
    assert rrf({"bm25": {}, "knn": {}}).scores == {}
    assert rrf({"bm25": {}, "knn": {"a": 1.0}}).scores == {"a": 1 / 61}


@pytest.mark.parametrize("k", [0, 0.5, -1, math.nan, math.inf, True, "60"])
def test_rank_constant_must_be_at_least_one(k: object) -> None:
    with pytest.raises(ConfigError, match="rank constant"):
        rrf(RUNS, k=k)  # type: ignore[arg-type]


def test_weights_are_validated() -> None:
    with pytest.raises(ConfigError, match=r"weight of 'knn' must be a finite number >= 0, got -1"):
        rrf(RUNS, weights={"knn": -1.0})
    with pytest.raises(ConfigError, match="weight of 'knn'"):
        rrf(RUNS, weights={"knn": math.nan})
    with pytest.raises(ConfigError, match=r"without a run: \['sparse'\]; runs are: \['bm25', 'knn'\]"):
        rrf(RUNS, weights={"sparse": 1.0})


def test_unknown_parameters_are_rejected() -> None:
    with pytest.raises(ConfigError, match="'rrf' got unknown parameter\\(s\\) 'rank_constant'; it accepts: weights, k"):
        rrf(RUNS, rank_constant=60)
