from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esbridge.errors import ConfigError
from esbridge.query.normalization import (
    NORMALIZATIONS,
    OPENSEARCH_MIN_MAX_FLOOR,
    distribution,
    get_normalization,
    l2,
    min_max,
    z_score,
)
from esbridge.query.types import Run

SCORES = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
RUNS = st.dictionaries(st.text(alphabet="abcdefgh", min_size=1, max_size=3), SCORES, max_size=12)


def approx(expected: dict[str, float]) -> object:
    return pytest.approx(expected, rel=1e-12, abs=1e-12)


# --- min-max ---


def test_min_max_spans_zero_to_one() -> None:
    # min 2, max 10, span 8: a (10-2)/8 = 1, b (6-2)/8 = 0.5, c (2-2)/8 = 0
    assert min_max({"a": 10.0, "b": 6.0, "c": 2.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}


def test_min_max_floor_lifts_only_the_lowest_score_as_opensearch_does() -> None:
    # OpenSearch's min_max gives 0.001 instead of 0 so the weakest hit beats a miss
    run = {"a": 10.0, "b": 6.0, "c": 2.0}
    assert min_max(run, floor=OPENSEARCH_MIN_MAX_FLOOR) == {"a": 1.0, "b": 0.5, "c": 0.001}


def test_min_max_of_negative_scores() -> None:
    # min -3, max 1, span 4: a (1+3)/4 = 1, b (-1+3)/4 = 0.5, c 0
    assert min_max({"a": 1.0, "b": -1.0, "c": -3.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}


@pytest.mark.parametrize("run", [{"a": 7.5}, {"a": 2.0, "b": 2.0}, {"a": 0.0, "b": 0.0, "c": 0.0}, {"a": -4.0}])
def test_min_max_without_spread_gives_one_like_opensearch_and_elasticsearch(run: Run) -> None:
    assert min_max(run) == dict.fromkeys(run, 1.0)
    assert min_max(run, floor=0.001) == dict.fromkeys(run, 1.0)


@pytest.mark.parametrize("floor", [-0.1, 1.5])
def test_min_max_rejects_a_floor_outside_zero_one(floor: float) -> None:
    with pytest.raises(ConfigError, match="floor"):
        min_max({"a": 1.0}, floor=floor)


# --- z-score ---


def test_z_score_uses_the_population_standard_deviation() -> None:
    # mean 2; variance ((4-2)^2 + 0 + (0-2)^2) / 3 = 8/3; std sqrt(8/3)
    # a = 2 / sqrt(8/3) = sqrt(4 * 3/8) = sqrt(1.5); b = 0; c = -sqrt(1.5)
    assert z_score({"a": 4.0, "b": 2.0, "c": 0.0}) == approx({"a": math.sqrt(1.5), "b": 0.0, "c": -math.sqrt(1.5)})


def test_z_score_of_negative_scores() -> None:
    # mean -2, variance (1 + 1) / 2 = 1: a = 1, b = -1
    assert z_score({"a": -1.0, "b": -3.0}) == approx({"a": 1.0, "b": -1.0})


@pytest.mark.parametrize("run", [{"a": 3.0}, {"a": 0.1, "b": 0.1, "c": 0.1}])
def test_z_score_without_spread_gives_zero(run: Run) -> None:
    # 0.1 * 3 / 3 is not exactly 0.1 in floats; the all-equal check must not depend on the mean
    assert z_score(run) == dict.fromkeys(run, 0.0)


# --- L2 ---


def test_l2_divides_by_the_norm() -> None:
    # norm sqrt(9 + 16) = 5: a 3/5, b 4/5
    assert l2({"a": 3.0, "b": 4.0}) == approx({"a": 0.6, "b": 0.8})


def test_l2_keeps_the_sign_of_negative_scores() -> None:
    assert l2({"a": 3.0, "b": -4.0}) == approx({"a": 0.6, "b": -0.8})
    assert l2({"a": -2.0}) == {"a": -1.0}


def test_l2_of_all_zero_scores_stays_zero() -> None:
    assert l2({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}


# --- distribution (DBSF) ---


def test_distribution_maps_three_sigma_bounds_to_zero_one() -> None:
    # mean 2; sample variance (4 + 0 + 4) / (3 - 1) = 4; std 2; bounds 2 -/+ 6 = [-4, 8], span 12
    # a (4+4)/12 = 2/3, b (2+4)/12 = 1/2, c (0+4)/12 = 1/3
    assert distribution({"a": 4.0, "b": 2.0, "c": 0.0}) == approx({"a": 2 / 3, "b": 0.5, "c": 1 / 3})


def test_distribution_clips_an_outlier_beyond_three_sigma() -> None:
    # one 10 and ten 0s: mean 10/11, sample variance ((10 - 10/11)^2 + 10 (10/11)^2) / 10 = 100/11,
    # std 10/sqrt(11); span 6 std = 60/sqrt(11)
    # 10 -> (10 - 10/11 + 30/sqrt(11)) / (60/sqrt(11)) = (100/sqrt(11) + 30) / 60 = 1.0025 > 1
    # 0  -> (30/sqrt(11) - 10/11) / (60/sqrt(11)) = (30 - 10/sqrt(11)) / 60
    run = {"top": 10.0} | {f"z{i}": 0.0 for i in range(10)}
    zero = (30 - 10 / math.sqrt(11)) / 60
    assert distribution(run, clip=False) == approx(dict.fromkeys(run, zero) | {"top": (100 / math.sqrt(11) + 30) / 60})
    assert distribution(run) == approx(dict.fromkeys(run, zero) | {"top": 1.0})


@pytest.mark.parametrize("run", [{"a": 3.0}, {"a": 2.0, "b": 2.0}, {"a": -1.0, "b": -1.0, "c": -1.0}])
def test_distribution_without_spread_gives_one_half_like_qdrant(run: Run) -> None:
    assert distribution(run) == dict.fromkeys(run, 0.5)


def test_distribution_of_negative_scores() -> None:
    # mean -2, sample variance (1 + 1) / 1 = 2, std sqrt(2); bounds -2 -/+ 3 sqrt(2), span 6 sqrt(2)
    # a = (-1 + 2 + 3 sqrt(2)) / (6 sqrt(2)) = 1/2 + 1/(6 sqrt(2))
    half_gap = 1 / (6 * math.sqrt(2))
    assert distribution({"a": -1.0, "b": -3.0}) == approx({"a": 0.5 + half_gap, "b": 0.5 - half_gap})


# --- shared conventions ---


@pytest.mark.parametrize("name", sorted(NORMALIZATIONS))
def test_empty_run_normalises_to_empty(name: str) -> None:
    assert get_normalization(name)({}) == {}


@pytest.mark.parametrize("name", sorted(NORMALIZATIONS))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_are_rejected(name: str, bad: float) -> None:
    with pytest.raises(ValueError, match="'b'"):
        get_normalization(name)({"a": 1.0, "b": bad})


def test_unknown_normalization_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="'minmax'; known: distribution, l2, min_max, z_score"):
        get_normalization("minmax")


@settings(max_examples=200, deadline=None)
@given(run=RUNS, floor=st.floats(min_value=0.0, max_value=1.0))
def test_min_max_stays_in_zero_one_and_keeps_the_order_of_scores(run: dict[str, float], floor: float) -> None:
    assert all(0.0 <= value <= 1.0 for value in min_max(run, floor=floor).values())
    normalized = min_max(run)  # a floor may lift the lowest hit above others, as it does in OpenSearch
    for a in run:
        for b in run:
            if run[a] > run[b]:
                assert normalized[a] >= normalized[b]


@settings(max_examples=200, deadline=None)
@given(run=RUNS)
def test_every_normalization_keeps_ids_and_order(run: dict[str, float]) -> None:
    for normalize in NORMALIZATIONS.values():
        assert list(normalize(run)) == list(run)


@settings(max_examples=200, deadline=None)
@given(run=RUNS)
def test_clipped_distribution_stays_in_zero_one(run: dict[str, float]) -> None:
    assert all(0.0 <= value <= 1.0 for value in distribution(run).values())


@settings(max_examples=200, deadline=None)
@given(run=RUNS)
def test_l2_output_is_a_unit_vector_or_zero(run: dict[str, float]) -> None:
    norm = math.hypot(*l2(run).values())
    assert norm == pytest.approx(1.0) or norm == 0.0
