from __future__ import annotations

import math

import pytest

from esbridge.errors import ConfigError
from esbridge.query.fusion import dbsf
from esbridge.query.types import Runs

# bm25 {4, 2, 0}: mean 2, sample std 2, bounds [-4, 8] -> a 8/12 = 2/3, b 6/12 = 1/2, c 4/12 = 1/3
# knn {1, 3}: mean 2, sample variance (1 + 1) / 1 = 2, std sqrt(2), bounds 2 -/+ 3 sqrt(2)
#   a (1 - 2 + 3 sqrt(2)) / (6 sqrt(2)) = 1/2 - 1/(6 sqrt(2)) = 0.5 - 0.117851 = 0.382149
#   d 1/2 + 1/(6 sqrt(2)) = 0.617851
RUNS: Runs = {"bm25": {"a": 4.0, "b": 2.0, "c": 0.0}, "knn": {"d": 3.0, "a": 1.0}}
GAP = 1 / (6 * math.sqrt(2))


def test_dbsf_sums_three_sigma_normalised_scores() -> None:
    # a 2/3 + 0.382149 = 1.048816; d 0.617851 (bm25 missing -> 0); b 0.5; c 0.333333
    result = dbsf(RUNS)
    assert result.scores == pytest.approx({"a": 2 / 3 + 0.5 - GAP, "d": 0.5 + GAP, "b": 0.5, "c": 1 / 3})
    assert list(result.scores) == ["a", "d", "b", "c"]
    assert result.contributions["a"] == pytest.approx({"bm25": 2 / 3, "knn": 0.5 - GAP})


def test_weighted_dbsf() -> None:
    # knn weight 2: a 2/3 + 2 * 0.382149 = 1.430964; d 2 * 0.617851 = 1.235702
    result = dbsf(RUNS, weights={"knn": 2.0})
    assert result.scores == pytest.approx({"a": 2 / 3 + 1 - 2 * GAP, "d": 1 + 2 * GAP, "b": 0.5, "c": 1 / 3})


def test_single_hit_and_flat_runs_contribute_one_half_like_qdrant() -> None:
    result = dbsf({"bm25": {"a": 9.0}, "knn": {"a": 0.3, "b": 0.3}})
    # a 0.5 + 0.5 = 1; b 0.5
    assert result.scores == {"a": 1.0, "b": 0.5}


def test_clip_false_keeps_outliers_beyond_three_sigma_as_qdrant_does() -> None:
    # one 10 and ten 0s: 10 normalises to (100/sqrt(11) + 30) / 60 = 1.0025 unclipped
    run = {"top": 10.0} | {f"z{i}": 0.0 for i in range(10)}
    assert dbsf({"bm25": run}).scores["top"] == 1.0
    assert dbsf({"bm25": run}, clip=False).scores["top"] == pytest.approx((100 / math.sqrt(11) + 30) / 60)


def test_parameters_are_validated() -> None:
    with pytest.raises(ConfigError, match="clip must be true or false"):
        dbsf(RUNS, clip="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'dbsf' got unknown parameter\\(s\\) 'normalization'"):
        dbsf(RUNS, normalization="min_max")
    with pytest.raises(ConfigError, match="without a run"):
        dbsf(RUNS, weights={"sparse": 1.0})


def test_empty_input() -> None:
    assert dbsf({}).scores == {}
    assert dbsf({"bm25": {}}).scores == {}
