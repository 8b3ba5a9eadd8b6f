"""Turning per-retriever contributions into a ``FusionResult``: best first, ties broken by id."""

from __future__ import annotations

import math
from collections.abc import Mapping

from esbridge.query.types import FusionResult


def ranked(scores: Mapping[str, float], contributions: Mapping[str, Mapping[str, float]]) -> FusionResult:
    """Scores sorted descending, equal scores by ascending id; contributions in the same order."""
    order = sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))
    return FusionResult(
        scores={doc_id: scores[doc_id] for doc_id in order},
        contributions={doc_id: dict(contributions.get(doc_id, {})) for doc_id in order},
    )


def summed(contributions: Mapping[str, Mapping[str, float]]) -> FusionResult:
    """The result of an additive method: each id's score is the sum of its contributions.

    ``math.fsum`` is exact before its one rounding, so the score does not depend on the order the runs
    came in and a permutation of the runs gives bit-identical scores (and so the same tie-breaks).
    """
    scores = {doc_id: math.fsum(parts.values()) for doc_id, parts in contributions.items()}
    return ranked(scores, contributions)
