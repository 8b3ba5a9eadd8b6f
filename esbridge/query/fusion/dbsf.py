"""Distribution-based score fusion."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from esbridge.errors import ConfigError
from esbridge.query.fusion.linear import weighted_sum
from esbridge.query.fusion.params import reject_unknown, resolve_weights
from esbridge.query.normalization import distribution
from esbridge.query.types import FusionResult, Runs


def dbsf(
    runs: Runs,
    *,
    weights: Mapping[str, float] | None = None,
    clip: bool = True,
    **unknown: Any,
) -> FusionResult:
    """Distribution-based score fusion (Mazzeschi, 2023), as implemented in Qdrant::

        norm_r(s) = (s - (mu_r - 3 sigma_r)) / (6 sigma_r)      clipped to [0, 1]
        score(d)  = sum over runs r containing d of  w_r * norm_r(score_r(d))

    M. Mazzeschi, "Distribution-Based Score Fusion (DBSF), a new approach to Vector Search Ranking", Nov. 2023;
    Qdrant ``score_fusion`` with ``ScoreFusion::dbsf()`` (``lib/segment/src/common/score_fusion.rs``).
    ``mu_r`` and ``sigma_r`` are the mean and sample standard deviation of run ``r``'s scores; a run of one
    hit, or without spread, normalises to 0.5. See ``esbridge.query.normalization.distribution``;
    ``clip=False`` gives Qdrant's unclipped values. A document missing from a run contributes 0 for it.
    """
    reject_unknown("dbsf", unknown, ("weights", "clip"))
    if not isinstance(clip, bool):
        raise ConfigError(f"dbsf clip must be true or false, got {clip!r}")
    return weighted_sum(runs, resolve_weights(runs, weights), functools.partial(distribution, clip=clip))
