from __future__ import annotations

import random

import pytest

from esbridge.errors import ConfigError
from esbridge.evaluation.qpp_fit import MIN_QUERIES, chosen_gains, cross_validated, fit

SHARES = (0.4, 0.6)


def queries(count: int, seed: int = 1) -> tuple[list[list[float]], list[list[float]]]:
    """Share 0.6 is worth 0.8 and 0.4 worth 0.6 when the fourth predictor is positive, the reverse otherwise."""
    draw = random.Random(seed)
    rows, gains = [], []
    for _ in range(count):
        row = [draw.gauss(0.0, 1.0) for _ in range(8)]
        rows.append(row)
        gains.append([0.6, 0.8] if row[3] > 0 else [0.8, 0.6])
    return rows, gains


def test_a_fitted_model_picks_the_better_share_from_the_predictor_that_decides() -> None:
    rows, gains = queries(400)
    model = fit(rows, gains, SHARES, ridge=1.0, source="synthetic")
    assert model.source == "synthetic"
    assert model.coefficients[3][1] > 0 > model.coefficients[3][0]
    held_rows, held_gains = queries(200, seed=2)
    picked = chosen_gains(model, held_rows, held_gains)
    assert sum(picked) / len(picked) > 0.75  # a fixed share gets 0.7 on average


def test_cross_validation_scores_choices_on_held_out_queries_reproducibly() -> None:
    rows, gains = queries(300)
    first = cross_validated(rows, gains, SHARES, ridge=1.0, repeats=2)
    assert first == cross_validated(rows, gains, SHARES, ridge=1.0, repeats=2)
    assert 0.75 < first <= 0.8


def test_noise_predictors_gain_nothing_over_a_fixed_share() -> None:
    rows, _ = queries(300)
    draw = random.Random(3)
    gains = [[0.6, 0.8] if draw.random() < 0.5 else [0.8, 0.6] for _ in rows]
    assert cross_validated(rows, gains, SHARES, ridge=10.0, repeats=2) == pytest.approx(0.7, abs=0.03)


def test_too_few_queries_or_misshapen_input_are_refused() -> None:
    rows, gains = queries(MIN_QUERIES - 1)
    with pytest.raises(ConfigError, match=f"at least {MIN_QUERIES} judged queries"):
        fit(rows, gains, SHARES)
    rows, gains = queries(100)
    with pytest.raises(ConfigError, match="one row of 8 values"):
        fit([row[:7] for row in rows], gains, SHARES)
    with pytest.raises(ConfigError, match="one value per share"):
        fit(rows, [row[:1] for row in gains], SHARES)
    with pytest.raises(ConfigError, match="finite"):
        fit([[float("nan")] * 8, *rows[1:]], gains, SHARES)
    with pytest.raises(ConfigError, match="folds"):
        cross_validated(rows, gains, SHARES, folds=1)


def test_cross_validation_works_from_the_fewest_queries_fit_accepts() -> None:
    # Each fold's model is fitted on four fifths of the queries, fewer than MIN_QUERIES when there are
    # fewer than 63: the minimum is about the model written, which is fitted on all of them.
    for count in (MIN_QUERIES, 62):
        rows, gains = queries(count)
        fit(rows, gains, SHARES)
        assert 0.6 <= cross_validated(rows, gains, SHARES, repeats=2) <= 0.8
