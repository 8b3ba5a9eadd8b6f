from __future__ import annotations

import math

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import dbsf, linear
from esbridge.query.normalization import OPENSEARCH_MIN_MAX_FLOOR
from esbridge.query.types import Runs

# min-max: bm25 span 10-2 = 8  -> a 1, b 0.5, c 0
#          knn  span 0.9-0.5 = 0.4 -> b 1, d (0.8-0.5)/0.4 = 0.75, a 0
RUNS: Runs = {
    "bm25": {"a": 10.0, "b": 6.0, "c": 2.0},
    "knn": {"b": 0.9, "d": 0.8, "a": 0.5},
}


def test_min_max_sum_is_the_default() -> None:
    # a 1 + 0 = 1; b 0.5 + 1 = 1.5; c 0 (knn missing -> 0); d 0.75 (bm25 missing -> 0)
    result = linear(RUNS)
    assert result.scores == pytest.approx({"b": 1.5, "a": 1.0, "d": 0.75, "c": 0.0})
    assert list(result.scores) == ["b", "a", "d", "c"]
    assert result.contributions["d"] == pytest.approx({"knn": 0.75})
    assert result.contributions["a"] == pytest.approx({"bm25": 1.0, "knn": 0.0})


def test_weighted_min_max() -> None:
    # weights 0.3 / 0.7: a 0.3; b 0.15 + 0.7 = 0.85; c 0; d 0.7 * 0.75 = 0.525
    result = linear(RUNS, weights={"bm25": 0.3, "knn": 0.7})
    assert result.scores == pytest.approx({"b": 0.85, "d": 0.525, "a": 0.3, "c": 0.0})
    assert list(result.scores) == ["b", "d", "a", "c"]


def test_opensearch_min_max_arithmetic_mean_is_reproduced() -> None:
    # OpenSearch: the lowest hit of each sub-query gets 0.001, a miss 0.0,
    # then sum(w * s) / sum(w) over all sub-queries (weights summing to 1):
    # a 0.3 * 1 + 0.7 * 0.001 = 0.3007; b 0.3 * 0.5 + 0.7 * 1 = 0.85
    # c 0.3 * 0.001 + 0 = 0.0003;       d 0 + 0.7 * 0.75 = 0.525
    result = linear(
        RUNS, weights={"bm25": 0.3, "knn": 0.7}, min_max_floor=OPENSEARCH_MIN_MAX_FLOOR, combination="arithmetic_mean"
    )
    assert result.scores == pytest.approx({"b": 0.85, "d": 0.525, "a": 0.3007, "c": 0.0003})


def test_arithmetic_mean_divides_by_the_weights_of_all_runs() -> None:
    # default weights 1 and 1 -> divide by 2 even where a run lacks the document
    # a (1 + 0.001) / 2 = 0.5005; b (0.5 + 1) / 2 = 0.75; c 0.001 / 2 = 0.0005; d 0.75 / 2 = 0.375
    result = linear(RUNS, min_max_floor=0.001, combination="arithmetic_mean")
    assert result.scores == pytest.approx({"b": 0.75, "a": 0.5005, "d": 0.375, "c": 0.0005})
    assert result.contributions["d"] == pytest.approx({"knn": 0.375})


def test_arithmetic_mean_with_all_weights_zero_gives_zero() -> None:
    result = linear(RUNS, weights={"bm25": 0.0, "knn": 0.0}, combination="arithmetic_mean")
    assert result.scores == {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}


def test_z_score() -> None:
    # bm25 {4, 2, 0}: mean 2, population std sqrt(8/3) -> a sqrt(1.5), b 0, c -sqrt(1.5)
    # knn {1, 3}: mean 2, std 1 -> a -1, b 1
    # a sqrt(1.5) - 1 = 0.2247; b 0 + 1 = 1; c -1.2247 (knn missing -> 0)
    runs = {"bm25": {"a": 4.0, "b": 2.0, "c": 0.0}, "knn": {"b": 3.0, "a": 1.0}}
    result = linear(runs, normalization="z_score")
    assert result.scores == pytest.approx({"b": 1.0, "a": math.sqrt(1.5) - 1, "c": -math.sqrt(1.5)})
    assert list(result.scores) == ["b", "a", "c"]


def test_l2() -> None:
    # bm25 {3, 4}: norm 5 -> a 0.6, b 0.8; knn {1, 1}: norm sqrt(2) -> 1/sqrt(2) = 0.7071 each
    # b 0.8 + 0.7071 = 1.5071; c 0.7071; a 0.6
    runs = {"bm25": {"b": 4.0, "a": 3.0}, "knn": {"b": 1.0, "c": 1.0}}
    result = linear(runs, normalization="l2")
    assert result.scores == pytest.approx({"b": 0.8 + 1 / math.sqrt(2), "c": 1 / math.sqrt(2), "a": 0.6})


def test_distribution_normalization_is_dbsf() -> None:
    assert linear(RUNS, normalization="distribution", weights={"knn": 2.0}) == dbsf(RUNS, weights={"knn": 2.0})


def test_single_hit_runs_normalise_to_one() -> None:
    # each run has one hit -> min-max 1.0 (as OpenSearch and Elasticsearch)
    result = linear({"bm25": {"a": 12.0}, "knn": {"b": 0.4}}, weights={"bm25": 0.6, "knn": 0.4})
    assert result.scores == pytest.approx({"a": 0.6, "b": 0.4})


def test_unknown_normalization_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="'minmax'; known: distribution, l2, min_max, z_score"):
        linear(RUNS, normalization="minmax")


def test_min_max_floor_needs_min_max() -> None:
    with pytest.raises(ConfigError, match="min_max_floor applies to the min_max normalization only"):
        linear(RUNS, normalization="z_score", min_max_floor=0.001)
    with pytest.raises(ConfigError, match=r"min_max_floor must be a finite number within \[0, 1\]"):
        linear(RUNS, min_max_floor=2.0)


def test_unknown_combination_and_parameters() -> None:
    with pytest.raises(ConfigError, match="unknown linear combination 'mean'; known: sum, arithmetic_mean"):
        linear(RUNS, combination="mean")
    with pytest.raises(ConfigError, match="'linear' got unknown parameter\\(s\\) 'k'"):
        linear(RUNS, k=60)


def test_weights_are_validated() -> None:
    with pytest.raises(ConfigError, match="weight of 'bm25'"):
        linear(RUNS, weights={"bm25": -0.5})
    with pytest.raises(ConfigError, match="without a run"):
        linear(RUNS, weights={"dense": 0.5})


def test_non_finite_scores_are_rejected() -> None:
    with pytest.raises(ValueError, match="score of 'x' is nan"):
        linear({"bm25": {"x": math.nan}})
