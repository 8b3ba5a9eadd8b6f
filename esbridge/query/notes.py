"""The warnings and step timings a search gathers as its stages run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Notes:
    """Warnings and step timings of one search so far, in the order the steps ran."""

    warnings: tuple[str, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)

    def add(self, *warnings: str | None, timings: Mapping[str, float] | None = None) -> Notes:
        kept = tuple(warning for warning in warnings if warning)
        return Notes((*self.warnings, *kept), {**self.timings, **(timings or {})})
