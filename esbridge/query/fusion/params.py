"""Checks shared by the fusion methods; bad parameters raise ``ConfigError`` naming what is accepted."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from esbridge.errors import ConfigError
from esbridge.query.types import Runs

DEFAULT_WEIGHT = 1.0


def reject_unknown(method: str, unknown: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Fail on parameters ``method`` does not take (they arrive through ``**params`` from settings)."""
    if unknown:
        names = ", ".join(repr(name) for name in sorted(unknown))
        raise ConfigError(
            f"fusion method {method!r} got unknown parameter(s) {names}; it accepts: {', '.join(accepted)}"
        )


def check_number(name: str, value: object, *, minimum: float, maximum: float = math.inf) -> float:
    """``value`` as a float if it is a real number within [``minimum``, ``maximum``]; ``ConfigError`` otherwise."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not minimum <= value <= maximum
    ):
        bounds = f">= {minimum:g}" if maximum == math.inf else f"within [{minimum:g}, {maximum:g}]"
        raise ConfigError(f"{name} must be a finite number {bounds}, got {value!r}")
    return float(value)


def resolve_weights(runs: Runs, weights: Mapping[str, float] | None) -> dict[str, float]:
    """One weight per run, in the runs' order: the given one, else 1.0.

    Weights must be finite and >= 0 and may only name retrievers present in ``runs``; a retriever that was
    asked but found nothing should be passed as an empty run, not left out. Fused scores add the weighted
    terms, so the weights' sum must be finite as well.
    """
    given = dict(weights or {})
    unknown = sorted(set(given) - set(runs))
    if unknown:
        raise ConfigError(f"weights name retrievers without a run: {unknown}; runs are: {sorted(runs)}")
    resolved = {
        name: check_number(f"weight of {name!r}", given.get(name, DEFAULT_WEIGHT), minimum=0.0) for name in runs
    }
    if not math.isfinite(sum(resolved.values())):
        raise ConfigError(f"weights must add up to a finite number, got {resolved}; scale them down")
    return resolved
