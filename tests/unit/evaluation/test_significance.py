from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from esbridge.evaluation.significance import macro_mean_difference, randomization_p_value


def test_macro_mean_weighs_collections_alike() -> None:
    # (1 + 1 + 1)/3 = 1 and (0 + 0)/2 = 0: the mean over collections is 0.5, not the pooled 0.6.
    assert macro_mean_difference([[1, 1, 1], [0, 0]]) == 0.5
    assert macro_mean_difference([[], [2.0]]) == 2.0
    assert macro_mean_difference([]) == 0.0


def test_exact_p_value_by_hand_one_collection() -> None:
    # Of the 8 sign patterns of (1, 1, 1), only all-plus and all-minus reach |mean| >= 1.
    assert randomization_p_value([[1.0, 1.0, 1.0]]) == 0.25


def test_exact_p_value_by_hand_two_collections() -> None:
    # Observed (1 + 0) / 2 = 0.5. Patterns: (s1 + inner) / 2 with inner in {0, 0, -0.5, 0.5}, so the
    # macro-means are +-0.5, +-0.5, +-0.25, +-0.75: six of the eight reach |0.5|.
    assert randomization_p_value([[1.0], [-0.5, 0.5]]) == 0.75


def test_no_difference_is_p_1() -> None:
    assert randomization_p_value([[0.0, 0.0], [0.0]]) == 1.0
    assert randomization_p_value([]) == 1.0


def test_sampled_p_value_of_a_consistent_gain_is_the_smallest_possible() -> None:
    gains = [[0.1] * 30, [0.2] * 40]
    assert randomization_p_value(gains, trials=999) == pytest.approx(1 / 1000)


def test_sampled_p_value_is_reproducible_and_large_for_noise() -> None:
    noise = [[0.32, -0.3, 0.1, -0.1, 0.2, -0.2, 0.05, -0.05, 0.0] * 3, [0.1, -0.1] * 5]
    first = randomization_p_value(noise, trials=2000)
    assert first == randomization_p_value(noise, trials=2000)
    assert first > 0.5


def test_trials_must_be_positive() -> None:
    with pytest.raises(ValueError, match="trials"):
        randomization_p_value([[1.0] * 20], trials=0)


def test_sampled_sign_patterns_are_drawn_in_blocks_with_the_same_p_value() -> None:
    # 10,000 patterns over 2,200 queries held at once took 350 MB (several GB for BEIR-sized collections);
    # drawn block by block from the same seeded generator they are the same patterns, so the same p-value.
    draw = np.random.default_rng(5)
    differences = [draw.normal(0.004, 0.2, 1500).round(4).tolist(), draw.normal(0.0, 0.2, 700).round(4).tolist()]
    tracemalloc.start()
    try:
        p_value = randomization_p_value(differences)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p_value == 0.15598440155984403  # as when every pattern was drawn in one array
    assert peak < 64_000_000


def test_sampled_p_value_is_close_to_the_exact_one_by_enumeration() -> None:
    # 18 queries: above EXACT_UP_TO, so sampled; every one of the 2**18 sign patterns enumerated here instead.
    rng = np.random.default_rng(11)
    parts = [rng.normal(0.05, 0.2, 11), rng.normal(0.0, 0.3, 7)]
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * 18)).reshape(18, -1).T
    macro = (signs[:, :11] @ parts[0] / 11 + signs[:, 11:] @ parts[1] / 7) / 2
    observed = abs((parts[0].mean() + parts[1].mean()) / 2)
    exact = float(np.mean(np.abs(macro) >= observed - 1e-12))
    assert randomization_p_value([list(parts[0]), list(parts[1])], trials=40_000) == pytest.approx(exact, abs=0.01)
