"""Significance of a difference in the mean over several collections: a stratified paired randomization test.

The mean over collections gives each collection the same weight whatever its number of queries, so a
paired t-test over the pooled queries (which weights each query alike) tests another quantity. Fisher's
randomization test fits it directly (Smucker, Allan and Carterette, "A comparison of statistical
significance tests for information retrieval evaluation", CIKM 2007): under the null hypothesis that
two systems are exchangeable, the sign of each per-query difference is arbitrary, so the observed
statistic is compared with its distribution over random sign flips. Flips happen query by query, within
each collection, and the statistic is the mean over collections of each collection's mean difference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

EXACT_UP_TO = 16
"""With at most this many queries in all, every sign pattern is enumerated (2**16 patterns) instead of sampled."""
PATTERN_BLOCK = 1_000_000
"""Signs drawn at a time when sampling (about 16 MB)."""


def macro_mean_difference(differences: Sequence[Sequence[float]]) -> float:
    """The mean over collections of each collection's mean per-query difference (empty collections skipped)."""
    means = [math.fsum(values) / len(values) for values in differences if len(values)]
    return math.fsum(means) / len(means) if means else 0.0


def randomization_p_value(
    differences: Sequence[Sequence[float]], *, trials: int = 10_000, seed: int = 20071106
) -> float:
    """Two-sided p-value of the macro-mean of ``differences`` (one sequence of per-query differences per
    collection) under random sign flips.

    Exact when there are at most ``EXACT_UP_TO`` queries; otherwise ``trials`` random patterns from a
    fixed seed (so a report is reproducible), counted with the observed one: ``(hits + 1) / (trials + 1)``.
    All-zero differences give 1.0.
    """
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    parts = [np.asarray(values, dtype=float) for values in differences if len(values)]
    if not parts:
        return 1.0
    observed = abs(float(np.mean([part.mean() for part in parts])))
    if observed == 0.0:
        return 1.0
    tolerance = 1e-12 * max(1.0, observed)
    total = sum(len(part) for part in parts)
    if total <= EXACT_UP_TO:
        patterns = np.array(list(itertools.product((1.0, -1.0), repeat=total)))
        statistic = _macro_means(parts, patterns)
        return float(np.mean(np.abs(statistic) >= observed - tolerance))
    rng = np.random.default_rng(seed)
    hits = 0
    # In blocks of about a million signs: all patterns at once take 16 bytes per sign (GBs for BEIR-sized
    # collections). One generator draws the same signs in blocks as at once, so the p-value is the same.
    block = max(1, PATTERN_BLOCK // total)
    for start in range(0, trials, block):
        patterns = rng.choice(np.array([1.0, -1.0]), size=(min(block, trials - start), total))
        statistic = _macro_means(parts, patterns)
        hits += int(np.sum(np.abs(statistic) >= observed - tolerance))
    return (hits + 1) / (trials + 1)


def _macro_means(parts: Sequence[np.ndarray], patterns: np.ndarray) -> np.ndarray:
    """The macro-mean of every row of sign ``patterns`` (columns: the queries of all parts, in order)."""
    result = np.zeros(patterns.shape[0])
    start = 0
    for part in parts:
        signs = patterns[:, start : start + len(part)]
        result += signs @ part / len(part)
        start += len(part)
    return result / len(parts)
