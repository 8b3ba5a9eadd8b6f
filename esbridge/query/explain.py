"""Turning a ranked id into a result, and, when asked, into the story of how it got its score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from esbridge.ids import doc_id_of, document_of
from esbridge.query.graph import GraphExpansion
from esbridge.query.link_rescore import Rescored
from esbridge.query.models import Explain, RerankExplain, RetrieverExplain, ScoreRange, ScoreScale, SearchHit
from esbridge.query.rerank import RerankTerms
from esbridge.query.shaping import Scale
from esbridge.query.types import FusionResult


@dataclass(frozen=True)
class Trail:
    """What every stage of one search produced, as the results' explanations read it."""

    runs: Mapping[str, Mapping[str, float]]
    sources: Mapping[str, Mapping[str, Any]]
    fused: FusionResult
    multipliers: Mapping[str, float] = field(default_factory=dict)
    expansion: GraphExpansion = field(default_factory=lambda: GraphExpansion({}, {}))
    rescored: Rescored | None = None
    rerank_scores: Mapping[str, float] = field(default_factory=dict)
    rerank_terms: Mapping[str, RerankTerms] = field(default_factory=dict)
    explanations: Mapping[str, Any] = field(default_factory=dict)
    """id -> the engine's own explanation (native hybrid)"""
    fields: Mapping[str, list[str]] = field(default_factory=dict)
    """retriever name -> the index's fields it searched (with boosts)"""
    unnormalized: Mapping[str, float] = field(default_factory=dict)
    """id -> the score shaping ranked it by"""
    scale: Scale | None = None
    """what normalized the shaped scores"""


def build_hit(item: str, score: float, trail: Trail, *, explain: bool) -> SearchHit:
    source = trail.sources.get(item, {})
    neighbour = trail.expansion.neighbors.get(item)
    doc_id = str(source.get("doc_id") or (neighbour.doc_id if neighbour else doc_id_of(item)))
    return SearchHit(
        id=item,
        doc_id=doc_id,
        score=score,
        title=str_or_none(source.get("title")),
        path=str_or_none(source.get("path")),
        entity_type=str_or_none(source.get("entity_type")),
        explain=explained(item, score, trail) if explain else None,
    )


def explained(item: str, score: float, trail: Trail) -> Explain:
    neighbour = trail.expansion.neighbors.get(item)
    rescored = trail.rescored
    doc_key = document_of(item, trail.sources.get(item, {}))
    linked = rescored.linked.get(doc_key, []) if rescored else []
    return Explain(
        retrievers={
            name: RetrieverExplain(rank=rank, score=run[item], fields=list(trail.fields.get(name, [])))
            for name, run in trail.runs.items()
            for rank, candidate in enumerate(run, start=1)
            if candidate == item
        },
        contributions=dict(trail.fused.contributions.get(item, {})),
        fused_score=trail.fused.scores.get(item, 0.0),
        neighbour_of=sorted(neighbour.neighbor_of) if neighbour else linked,
        hops=neighbour.hops if neighbour else None,
        graph_score=trail.expansion.scores.get(item),
        link_strength=neighbour.strength if neighbour else None,
        recency_multiplier=trail.multipliers.get(item, 1.0),
        link_lift=rescored.lifts.get(doc_key) if rescored else None,
        link_shift=rescored.shifts.get(item) if rescored else None,
        rerank_score=trail.rerank_scores.get(item),
        reranking=reranking(trail.rerank_terms.get(item)),
        engine_explanation=trail.explanations.get(item),
        unnormalized_score=trail.unnormalized.get(item),
        normalization=ScoreScale(low=trail.scale.low, high=trail.scale.high) if trail.scale else None,
        final_score=score,
    )


def reranking(terms: RerankTerms | None) -> RerankExplain | None:
    if terms is None:
        return None
    return RerankExplain(
        reranker_score=terms.reranker_score,
        reranker_range=ScoreRange(low=terms.reranker_range[0], high=terms.reranker_range[1]),
        score_before=terms.score_before,
        before_range=ScoreRange(low=terms.before_range[0], high=terms.before_range[1]),
        weight=terms.weight,
        combined=terms.combined,
        base=terms.base,
    )


def str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
