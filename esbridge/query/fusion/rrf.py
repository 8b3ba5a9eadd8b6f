"""Weighted reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from esbridge.query.fusion.params import check_number, reject_unknown, resolve_weights
from esbridge.query.fusion.result import summed
from esbridge.query.types import FusionResult, Runs

DEFAULT_RANK_CONSTANT = 60


def rrf(
    runs: Runs,
    *,
    weights: Mapping[str, float] | None = None,
    k: float = DEFAULT_RANK_CONSTANT,
    **unknown: Any,
) -> FusionResult:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009), weighted per retriever.

    G. V. Cormack, C. L. A. Clarke, S. Büttcher, "Reciprocal rank fusion outperforms Condorcet and individual
    rank learning methods", SIGIR 2009, pp. 758-759, https://doi.org/10.1145/1571941.1572114 ::

        score(d) = sum over runs r containing d of  w_r / (k + rank_r(d))

    ``rank_r(d)`` counts from 1 in the run's order (its mapping order; scores are ignored). ``k`` (>= 1,
    default 60, the paper's value) damps the lead of top ranks. ``w_r`` defaults to 1.0, which is the paper's
    unweighted RRF; Elasticsearch's ``rrf`` retriever (9.2+) weights the same way. Each contribution is
    ``contributions[d][r]``.
    """
    reject_unknown("rrf", unknown, ("weights", "k"))
    constant = check_number("rrf rank constant k", k, minimum=1.0)
    resolved = resolve_weights(runs, weights)
    contributions: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        for rank, doc_id in enumerate(run, start=1):
            contributions.setdefault(doc_id, {})[name] = resolved[name] / (constant + rank)
    return summed(contributions)
