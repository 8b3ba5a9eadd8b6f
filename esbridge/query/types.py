"""The plain data the pure query stages pass between them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Run = Mapping[str, float]
"""One retriever's answer: id -> raw score, in the retriever's rank order (first = rank 1)."""

Runs = Mapping[str, Run]
"""Answers by retriever name, e.g. {"bm25": {...}, "knn": {...}}."""


@dataclass(frozen=True)
class FusionDecision:
    """What a query-dependent fusion method decided for one query, as the response shows it."""

    reason: str
    effective_weights: dict[str, float] = field(default_factory=dict)
    """The weight each retriever was fused with; 0.0 for one left out."""
    kind: str | None = None
    """``adaptive``: how the query was read (natural language, mixed, identifier)."""
    identifiers: list[str] = field(default_factory=list)
    """``adaptive``: the identifiers found in the query."""
    knn_share: float | None = None
    """``qpp``: the kNN share chosen; None when the runs could not be read and the base weights were used."""
    predictors: dict[str, float] = field(default_factory=dict)
    """``qpp``: the query-performance predictors read from the two runs."""
    predicted_ndcg_at_10: dict[str, float] = field(default_factory=dict)
    """``qpp``: predicted nDCG@10 per candidate share."""
    caution: str | None = None
    """Why the decision may be off (``qpp``: its model was fitted on another embedding model's scores)."""


@dataclass(frozen=True)
class FusionResult:
    """Fused scores (sorted best first, ties broken by id) and what each retriever contributed to each id."""

    scores: dict[str, float]
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)

    def describe(self) -> FusionDecision | None:
        """The per-query decision of a method that makes one; None for a fixed rule (rrf, linear, dbsf)."""
        return None
