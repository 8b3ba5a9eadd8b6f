"""Linear combination of normalised scores."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from esbridge.errors import ConfigError
from esbridge.query.fusion.params import check_number, reject_unknown, resolve_weights
from esbridge.query.fusion.result import summed
from esbridge.query.normalization import Normalization, get_normalization, min_max
from esbridge.query.types import FusionResult, Runs

COMBINATIONS = ("sum", "arithmetic_mean")


def weighted_sum(
    runs: Runs, weights: Mapping[str, float], normalize: Normalization, *, divisor: float = 1.0
) -> FusionResult:
    """``sum_r weights[r] * normalize(run_r)[d] / divisor``; a run that lacks ``d`` adds nothing for it."""
    contributions: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        for doc_id, value in normalize(run).items():
            contributions.setdefault(doc_id, {})[name] = weights[name] * value / divisor
    return summed(contributions)


def linear(
    runs: Runs,
    *,
    weights: Mapping[str, float] | None = None,
    normalization: str = "min_max",
    min_max_floor: float = 0.0,
    combination: str = "sum",
    **unknown: Any,
) -> FusionResult:
    """Weighted sum of per-run normalised scores (CombSUM of Fox & Shaw, TREC-2 1993, with weights)::

        combination="sum":              score(d) = sum_r w_r * norm_r(score_r(d))
        combination="arithmetic_mean":  score(d) = sum_r w_r * norm_r(score_r(d)) / sum_r w_r

    E. A. Fox, J. A. Shaw, "Combination of multiple searches", TREC-2, NIST SP 500-215, 1993; weighted
    normalised combination as in Lee, SIGIR 1997 and Bruch et al., "An Analysis of Fusion Functions for
    Hybrid Retrieval", ACM TOIS 42(1), 2023.

    ``normalization`` is a name from ``esbridge.query.normalization.NORMALIZATIONS`` (``min_max``, the
    default, ``z_score``, ``l2`` or ``distribution``). A document missing from a run contributes 0 for that
    run, as in OpenSearch's normalization-processor and Elasticsearch's ``linear`` retriever. With
    ``z_score`` 0 is the run's mean, so a hit below the mean scores lower than a miss.

    To reproduce OpenSearch's ``min_max`` + ``arithmetic_mean`` exactly, pass ``min_max_floor=0.001``
    (``OPENSEARCH_MIN_MAX_FLOOR``) and ``combination="arithmetic_mean"``. The mean divides by the sum of the
    weights of all runs, present or not, because OpenSearch counts a missing sub-query score as 0.0 and adds
    its weight; with weights summing to 1, as OpenSearch requires, it equals the sum. (OpenSearch computes in
    32-bit floats, so scores agree to about 7 digits.)
    """
    reject_unknown("linear", unknown, ("weights", "normalization", "min_max_floor", "combination"))
    normalize = get_normalization(normalization)
    floor = check_number("linear min_max_floor", min_max_floor, minimum=0.0, maximum=1.0)
    if floor:
        if normalize is not min_max:
            raise ConfigError(f"min_max_floor applies to the min_max normalization only, not {normalization!r}")
        normalize = functools.partial(min_max, floor=floor)
    if combination not in COMBINATIONS:
        raise ConfigError(f"unknown linear combination {combination!r}; known: {', '.join(COMBINATIONS)}")
    resolved = resolve_weights(runs, weights)
    total = math.fsum(resolved.values())
    # With every weight 0 all contributions are 0 already, which is also what OpenSearch returns.
    divisor = total if combination == "arithmetic_mean" and total > 0.0 else 1.0
    return weighted_sum(runs, resolved, normalize, divisor=divisor)
