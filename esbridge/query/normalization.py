"""Per-run score normalisation: each function maps one run's raw scores onto a common scale.

Every function is pure, keeps the run's order and ids, and returns ``{}`` for an empty run. Runs must hold
finite scores (``ValueError`` otherwise). The functions are looked up by name in ``NORMALIZATIONS``; the
names follow OpenSearch's normalization-processor (``min_max``, ``z_score``, ``l2``) where one exists.

Edge cases match OpenSearch and Elasticsearch (``min_max``, ``l2``) and Qdrant (``distribution``), so that
client-side and engine-side fusion agree; ``z_score`` is the textbook one (see docs/fusion.md):

==================  ==========================  ======================  ==========  =================
run                 ``min_max``                 ``z_score``             ``l2``      ``distribution``
==================  ==========================  ======================  ==========  =================
empty               ``{}``                      ``{}``                  ``{}``      ``{}``
one item            1.0                         0.0                     ±1.0 or 0   0.5
all scores equal    1.0 each                    0.0 each                s / norm    0.5 each
all scores zero     1.0 each                    0.0 each                0.0 each    0.5 each
negative scores     shifted into [0, 1]         allowed                 sign kept   shifted, clipped
==================  ==========================  ======================  ==========  =================
"""

from __future__ import annotations

import math
from collections.abc import Callable

from esbridge.errors import ConfigError
from esbridge.query.types import Run

Normalization = Callable[[Run], dict[str, float]]
"""Raw scores of one run -> normalised scores, same ids in the same order."""

OPENSEARCH_MIN_MAX_FLOOR = 0.001
"""What OpenSearch's ``min_max`` gives a run's lowest score instead of 0 (its ``MIN_SCORE``)."""


def check_finite(run: Run) -> None:
    """Raise ``ValueError`` naming the first id whose score is NaN or infinite."""
    for doc_id, score in run.items():
        if not math.isfinite(score):
            raise ValueError(f"score of {doc_id!r} is {score!r}; fusion needs finite scores")


def min_max(run: Run, *, floor: float = 0.0) -> dict[str, float]:
    """Min-max normalisation (Lee, SIGIR 1997): ``(s - min) / (max - min)``, so the run spans [0, 1].

    J. H. Lee, "Analyses of multiple evidence combination", SIGIR 1997, pp. 267-276.

    When every score is the same (a single hit included) each becomes 1.0, as in OpenSearch's
    ``min_max`` and Elasticsearch's ``minmax`` normalizer: a lone hit is that retriever's best answer.
    ``floor`` replaces the 0.0 the run's lowest score would get; OpenSearch uses 0.001
    (``OPENSEARCH_MIN_MAX_FLOOR``) so that its weakest hit still outscores a document the sub-query missed.
    """
    if not 0.0 <= floor <= 1.0:
        raise ConfigError(f"min_max floor must be within [0, 1], got {floor!r}")
    check_finite(run)
    if not run:
        return {}
    low, high = min(run.values()), max(run.values())
    if high == low:
        return dict.fromkeys(run, 1.0)
    span = high - low
    normalized = {doc_id: (score - low) / span for doc_id, score in run.items()}
    return {doc_id: value if value > 0.0 else floor for doc_id, value in normalized.items()}


def z_score(run: Run) -> dict[str, float]:
    """Z-score (standard score) normalisation: ``(s - mean) / std``, with the population standard deviation.

    Montague & Aslam, "Relevance score normalization for metasearch", CIKM 2001, pp. 427-433 (the ZMUV
    method: zero mean, unit variance). Scores below the run's mean become negative.

    A run whose scores are all equal (a single hit included) has no spread; every score becomes 0.0, the mean.
    """
    check_finite(run)
    if not run:
        return {}
    scores = list(run.values())
    if max(scores) == min(scores):
        return dict.fromkeys(run, 0.0)
    mean = math.fsum(scores) / len(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    if std == 0.0:  # the spread underflowed
        return dict.fromkeys(run, 0.0)
    return {doc_id: (score - mean) / std for doc_id, score in run.items()}


def l2(run: Run) -> dict[str, float]:
    """L2 normalisation: ``s / sqrt(sum of s_i^2)``, the run's scores seen as a unit vector.

    As OpenSearch's ``l2`` technique and Elasticsearch's ``l2_norm`` normalizer. The sign of a negative score
    is kept. A run whose scores are all zero has no norm; its scores stay 0.0.
    """
    check_finite(run)
    norm = math.hypot(*run.values())
    if norm == 0.0:
        return dict.fromkeys(run, 0.0)
    return {doc_id: score / norm for doc_id, score in run.items()}


def distribution(run: Run, *, clip: bool = True) -> dict[str, float]:
    """Distribution-based normalisation (DBSF): min-max between ``mean - 3 std`` and ``mean + 3 std``.

    M. Mazzeschi, "Distribution-Based Score Fusion (DBSF), a new approach to Vector Search Ranking", 2023
    (https://medium.com/plain-simple-software/distribution-based-score-fusion-dbsf-a-new-approach-to-vector-search-ranking-f87c37488b18);
    implemented as in Qdrant (``lib/segment/src/common/score_fusion.rs``, ``distr_norm``): sample standard
    deviation (n - 1), and 0.5 for a single hit or a run without spread.

    The three-sigma bounds are not the run's extremes, so an outlier can fall outside them (possible from
    11 hits on); ``clip`` (the default) pins such scores to 0 or 1. Qdrant does not clip: pass ``clip=False``
    to match it.
    """
    check_finite(run)
    if not run:
        return {}
    scores = list(run.values())
    if len(scores) == 1 or max(scores) == min(scores):
        return dict.fromkeys(run, 0.5)
    mean = math.fsum(scores) / len(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
    low, high = mean - 3 * std, mean + 3 * std
    if high == low:  # the spread underflowed
        return dict.fromkeys(run, 0.5)
    normalized = {doc_id: (score - low) / (high - low) for doc_id, score in run.items()}
    if clip:
        return {doc_id: min(1.0, max(0.0, value)) for doc_id, value in normalized.items()}
    return normalized


NORMALIZATIONS: dict[str, Normalization] = {
    "min_max": min_max,
    "z_score": z_score,
    "l2": l2,
    "distribution": distribution,
}


def get_normalization(name: str) -> Normalization:
    """The normalisation called ``name``; ``ConfigError`` listing the known names otherwise."""
    try:
        return NORMALIZATIONS[name]
    except KeyError:
        known = ", ".join(sorted(NORMALIZATIONS))
        raise ConfigError(f"unknown score normalization {name!r}; known: {known}") from None
