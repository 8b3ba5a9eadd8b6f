"""The plain data the pure query stages pass between them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Run = Mapping[str, float]
"""One retriever's answer: id -> raw score, in the retriever's rank order (first = rank 1)."""

Runs = Mapping[str, Run]
"""Answers by retriever name, e.g. {"bm25": {...}, "knn": {...}}."""


@dataclass(frozen=True)
class FusionResult:
    """Fused scores (sorted best first, ties broken by id) and what each retriever contributed to each id."""

    scores: dict[str, float]
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)
