"""The example search and link data the graph expansion tests share."""

from __future__ import annotations

from collections.abc import Mapping

# A#1 and A#0 are chunks of document A; every item here is "<doc>#<n>".
SCORES = {"A#1": 0.9, "A#0": 0.6, "B#0": 0.5, "C#0": 0.3}
LINKS = {"A": ["X", "B"], "B": ["Y"], "Z": ["A"], "W": ["B", "A"]}


def docs_of(scores: Mapping[str, float]) -> dict[str, str]:
    return {item: item.split("#")[0] for item in scores}
