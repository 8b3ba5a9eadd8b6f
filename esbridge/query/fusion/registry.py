"""The one place fusion methods are looked up by name.

The built-in methods register themselves with ``register_fusion`` when ``esbridge.query.fusion`` is
imported; a plugin registers the same way (entry points will call it later).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from esbridge.errors import ConfigError
from esbridge.query.types import FusionResult, Runs


class FusionMethod(Protocol):
    """Fuses the runs of several retrievers into one ranking.

    ``weights`` maps retriever names (keys of ``runs``) to non-negative multipliers, 1.0 for a retriever
    not named; other keyword parameters are the method's own, and one it does not take is a ``ConfigError``.
    """

    def __call__(self, runs: Runs, *, weights: Mapping[str, float] | None = None, **params: Any) -> FusionResult: ...


FUSION_METHODS: dict[str, FusionMethod] = {}


def register_fusion(name: str, method: FusionMethod, *, replace: bool = False) -> FusionMethod:
    """Make ``method`` available as ``name``; registering a taken name needs ``replace=True``."""
    if not name or name != name.strip():
        raise ConfigError(f"a fusion method needs a non-empty name without surrounding spaces, got {name!r}")
    if name in FUSION_METHODS and not replace and FUSION_METHODS[name] is not method:
        raise ConfigError(f"fusion method {name!r} is already registered")
    FUSION_METHODS[name] = method
    return method


def get_fusion(name: str) -> FusionMethod:
    """The fusion method registered as ``name``; ``ConfigError`` listing the known names otherwise."""
    try:
        return FUSION_METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown fusion method {name!r}; known: {', '.join(sorted(FUSION_METHODS))}") from None
