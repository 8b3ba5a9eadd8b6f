"""The one place fusion methods are looked up by name.

Methods come from the ``esbridge.fusion`` entry-point group, where esbridge declares its built-ins just
as a plugin package declares its own (``esbridge.plugins``); ``register_fusion`` adds one at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from esbridge.plugins import FUSION_GROUP, Registry
from esbridge.query.types import FusionResult, Runs


class FusionMethod(Protocol):
    """Fuses the runs of several retrievers into one ranking.

    ``weights`` maps retriever names (keys of ``runs``) to non-negative multipliers, 1.0 for a retriever
    not named; other keyword parameters are the method's own, and one it does not take is a ``ConfigError``.
    A method that reads the query or the candidates' stored fields declares a ``context`` keyword and gets a
    ``FusionContext`` (``esbridge.query.fusion.context``); built-ins and plugins are called alike (``fuse``).
    """

    def __call__(self, runs: Runs, *, weights: Mapping[str, float] | None = None, **params: Any) -> FusionResult: ...


FUSION_METHODS: Registry[FusionMethod] = Registry("fusion method", FUSION_GROUP)


def register_fusion(name: str, method: FusionMethod, *, replace: bool = False) -> FusionMethod:
    """Make ``method`` available as ``name``; registering a taken name needs ``replace=True``."""
    return FUSION_METHODS.register(name, method, replace=replace)


def get_fusion(name: str) -> FusionMethod:
    """The fusion method registered as ``name``; ``ConfigError`` listing the known names otherwise."""
    return FUSION_METHODS.get_named(name)
