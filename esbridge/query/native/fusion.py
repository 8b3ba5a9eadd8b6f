"""esbridge's fusion settings in the terms both engines' server-side fusion understand.

Only what both the client-side path and an engine compute alike is translated: weighted RRF, and
linear combination of ``min_max`` or ``l2`` normalised scores, over exactly one lexical (``bm25``) and
one semantic (``knn``) retriever. Anything else is refused with a ``ConfigError`` that says why,
instead of being approximated silently: ``qpp`` (weights chosen per query), ``dbsf``, ``adaptive``,
plugin methods or retrievers, a fractional RRF constant, and ``z_score``, which OpenSearch computes
differently (sample deviation, below-mean scores raised to 0.001, see docs/native-hybrid.md) and
Elasticsearch does not offer.

Rank counting is the same everywhere (the first hit has rank 1: Cormack et al. 2009, OpenSearch's
``RRFNormalizationTechnique``, Elasticsearch's ``rrf`` retriever). Weights differ only in scale:
OpenSearch requires them to sum to 1, esbridge and Elasticsearch take any non-negative numbers; scaling
every weight by one factor changes no ranking, so ``shares`` are sent where a sum of 1 is required.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from esbridge.errors import ConfigError
from esbridge.query.fusion.rrf import DEFAULT_RANK_CONSTANT

NativeMethod = Literal["rrf", "linear"]
LEXICAL, SEMANTIC = "bm25", "knn"
NORMALIZATIONS = ("min_max", "l2")
COMBINATIONS = ("sum", "arithmetic_mean")


@dataclass(frozen=True)
class NativeFusion:
    """A fusion configuration both the client-side path and an engine can compute.

    ``weights`` are (lexical, semantic), as configured. The sub-queries are always sent lexical first.
    """

    method: NativeMethod
    weights: tuple[float, float] = (1.0, 1.0)
    rank_constant: int = DEFAULT_RANK_CONSTANT
    normalization: str = "min_max"
    combination: str = "sum"
    min_max_floor: float = 0.0

    @property
    def shares(self) -> tuple[float, float]:
        """The weights scaled to sum to 1 (OpenSearch's requirement), rounded to 6 digits."""
        total = sum(self.weights)
        lexical = round(self.weights[0] / total, 6)
        return (lexical, round(1.0 - lexical, 6))

    @property
    def equal_weights(self) -> bool:
        return math.isclose(self.weights[0], self.weights[1])

    def client_params(self) -> dict[str, float | str]:
        """The client-side fusion parameters of the same configuration (``pipeline.fusion_params``)."""
        if self.method == "rrf":
            return {"k": self.rank_constant}
        params: dict[str, float | str] = {"normalization": self.normalization, "combination": self.combination}
        if self.min_max_floor:
            params["min_max_floor"] = self.min_max_floor
        return params


def native_fusion(
    method: str,
    weights: Mapping[str, float],
    params: Mapping[str, Any],
    retrievers: Sequence[str],
) -> NativeFusion:
    """The server-side form of a fusion configuration; ``ConfigError`` naming what cannot be expressed."""
    if sorted(retrievers) != sorted((LEXICAL, SEMANTIC)):
        raise ConfigError(
            f"native hybrid runs exactly the {LEXICAL!r} and {SEMANTIC!r} retrievers; pipeline.retrievers is "
            f"{list(retrievers)} (use mode 'client' for other retrievers)"
        )
    unknown_weights = sorted(set(weights) - {LEXICAL, SEMANTIC})
    if unknown_weights:
        raise ConfigError(f"weights name retrievers that native hybrid does not run: {unknown_weights}")
    pair = (float(weights.get(LEXICAL, 1.0)), float(weights.get(SEMANTIC, 1.0)))
    if any(not math.isfinite(weight) or weight < 0 for weight in pair) or sum(pair) <= 0:
        raise ConfigError(f"native hybrid needs non-negative weights with a positive sum, got {dict(weights)}")
    if method == "rrf":
        return NativeFusion("rrf", pair, rank_constant=_rank_constant(params))
    if method == "linear":
        return _linear(pair, params)
    raise ConfigError(
        f"fusion method {method!r} has no server-side equivalent in OpenSearch or Elasticsearch; native hybrid "
        "supports 'rrf' and 'linear' (use mode 'client' or 'auto' for the others"
        + (", or fusion 'linear', qpp's fixed-weight base, to fuse in the engine)" if method == "qpp" else ")")
    )


def _rank_constant(params: Mapping[str, Any]) -> int:
    _only("rrf", params, ("k",))
    k = params.get("k", DEFAULT_RANK_CONSTANT)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not float(k).is_integer() or not 1 <= k <= 10_000:
        raise ConfigError(f"native RRF needs a whole rank constant k within [1, 10000] (OpenSearch's range), got {k!r}")
    return int(k)


def _linear(weights: tuple[float, float], params: Mapping[str, Any]) -> NativeFusion:
    _only("linear", params, ("normalization", "combination", "min_max_floor"))
    normalization = str(params.get("normalization", "min_max"))
    combination = str(params.get("combination", "sum"))
    floor = params.get("min_max_floor", 0.0)
    if normalization not in NORMALIZATIONS:
        raise ConfigError(
            f"normalization {normalization!r} has no server-side equivalent; native linear fusion supports "
            f"{', '.join(NORMALIZATIONS)}"
        )
    if combination not in COMBINATIONS:
        raise ConfigError(f"linear combination {combination!r} is not one of {', '.join(COMBINATIONS)}")
    if isinstance(floor, str) or not 0.0 <= floor <= 1.0:
        raise ConfigError(f"min_max_floor must be within [0, 1], got {floor!r}")
    if floor and normalization != "min_max":  # as the client-side linear fusion refuses it
        raise ConfigError(f"min_max_floor applies to the min_max normalization only, not {normalization!r}")
    return NativeFusion(
        "linear", weights, normalization=normalization, combination=combination, min_max_floor=float(floor)
    )


def _only(method: str, params: Mapping[str, Any], accepted: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(f"{method} got parameter(s) {unknown} that native hybrid cannot express; it takes {accepted}")
