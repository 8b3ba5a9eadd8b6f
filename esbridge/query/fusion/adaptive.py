"""Query-adaptive fusion: lean on the lexical retriever when the query names an identifier."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from esbridge.errors import ConfigError
from esbridge.query.fusion.context import FusionContext, fuse, fusion_traits
from esbridge.query.fusion.params import check_number, reject_unknown, resolve_weights
from esbridge.query.fusion.query_kind import QueryClassification, QueryKind, classify_query
from esbridge.query.fusion.registry import get_fusion
from esbridge.query.fusion.result import ranked
from esbridge.query.types import FusionDecision, FusionResult, Runs

BOOST_KEY = "identifier_boost"
"""The contributions key under which the verbatim-match boost is recorded."""

Contains = Callable[[str, str], bool]
"""``contains(doc_id, identifier)``: whether the document's text holds the identifier."""

__all__ = [
    "BOOST_KEY",
    "AdaptiveDecision",
    "AdaptiveResult",
    "Contains",
    "QueryClassification",
    "QueryKind",
    "adaptive",
    "classify_query",
    "text_contains",
]


@dataclass(frozen=True)
class AdaptiveDecision:
    """What the adaptive method did, for explanations and logs."""

    kind: QueryKind
    identifiers: tuple[str, ...]
    base: str
    """The fusion method that did the fusing."""
    effective_weights: dict[str, float]
    """Weight used per retriever; 0.0 for a retriever left out."""
    lexical_only: bool
    boosted: tuple[str, ...]
    """Ids whose text holds an identifier verbatim, in fused order."""
    reason: str


@dataclass(frozen=True)
class AdaptiveResult(FusionResult):
    """A ``FusionResult`` that also says how the query was read and what that changed."""

    decision: AdaptiveDecision = field(kw_only=True)

    def describe(self) -> FusionDecision:
        decision = self.decision
        return FusionDecision(
            reason=decision.reason,
            effective_weights=dict(decision.effective_weights),
            kind=decision.kind.value,
            identifiers=list(decision.identifiers),
        )


_ACCEPTED = (
    *("weights", "context", "query", "lexical", "base", "base_params"),
    *("lexical_factor", "boost", "texts", "contains"),
)


def _identifiers_only(query: str) -> bool:
    return classify_query(query).kind is QueryKind.IDENTIFIER


@fusion_traits(reads_texts=True, lexical_only=_identifiers_only)
def adaptive(
    runs: Runs,
    *,
    weights: Mapping[str, float] | None = None,
    context: FusionContext | None = None,
    query: str = "",
    lexical: str = "bm25",
    base: str = "rrf",
    base_params: Mapping[str, Any] | None = None,
    lexical_factor: float = 2.0,
    boost: float = 0.5,
    texts: Mapping[str, str] | None = None,
    contains: Contains | None = None,
    **unknown: Any,
) -> AdaptiveResult:
    """Fuse with the ``base`` method after reading ``query`` with ``classify_query``.

    * identifiers only (``PII-2024-0042``): the ``lexical`` run alone goes through ``base``; the dense
      retrievers, which match codes poorly, are left out. If the lexical run is empty the next rule applies.
    * words and identifiers (``what does D40 mean``): all runs, the lexical weight multiplied by
      ``lexical_factor`` (default 2.0).
    * natural language, or no run named ``lexical`` (default ``"bm25"``): exactly the ``base`` method with
      ``weights``. The decision's ``reason`` says which case applied.

    When identifiers were found and ``texts`` (id -> text) or ``contains`` is given, each fused document
    whose text holds an identifier verbatim gets ``boost`` times the largest absolute fused score added,
    recorded as ``contributions[d]["identifier_boost"]``. The default matcher (``text_contains``) is case
    sensitive and wants the identifier not glued to other word characters (``D40`` does not match ``D400``).
    From a searcher, ``context`` gives the query and the candidates' texts when ``query`` and ``texts`` are not
    given; identifier-only queries then skip the semantic retrievers altogether (``fusion_traits``).

    This is a heuristic of esbridge's, in the spirit of query-dependent fusion weights (Bruch et al., "An
    Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023, who find the best weights vary by
    query set) and of routing keyword-like queries to lexical search.
    """
    reject_unknown("adaptive", unknown, _ACCEPTED)
    if base == "adaptive":
        raise ConfigError("adaptive fusion cannot use itself as its base method")
    base_method = get_fusion(base)
    params = dict(base_params or {})
    if "weights" in params:
        raise ConfigError("give adaptive fusion its weights directly, not inside base_params")
    factor = check_number("adaptive lexical_factor", lexical_factor, minimum=0.0)
    boost_fraction = check_number("adaptive boost", boost, minimum=0.0)
    if texts is not None and contains is not None:
        raise ConfigError("give adaptive fusion either texts or contains, not both")
    if BOOST_KEY in runs:
        raise ConfigError(f"{BOOST_KEY!r} is reserved by adaptive fusion and cannot name a retriever")
    if context is not None:
        query = query or context.query
        if texts is None and contains is None:
            texts = context.texts()
    context = context or FusionContext(query=query)
    resolved = resolve_weights(runs, weights)
    reading = classify_query(query)

    if reading.kind is QueryKind.IDENTIFIER and runs.get(lexical):
        effective = {name: 1.0 if name == lexical else 0.0 for name in runs}
        fused = fuse(base_method, {lexical: runs[lexical]}, weights={lexical: 1.0}, context=context, params=params)
        lexical_only, reason = True, f"identifier query: {lexical!r} results only"
    else:
        effective = dict(resolved)
        lexical_only, reason = False, f"natural-language query: plain {base}"
        if reading.identifiers and lexical not in runs:
            reason = f"query holds identifiers, but there is no {lexical!r} run: plain {base}"
        elif reading.identifiers:
            effective[lexical] = resolved[lexical] * factor
            reason = f"query holds identifiers: {lexical!r} weight x{factor:g}"
            if reading.kind is QueryKind.IDENTIFIER:
                reason = f"identifier query, but {lexical!r} found nothing: {lexical!r} weight x{factor:g}"
        fused = fuse(base_method, runs, weights=effective, context=context, params=params)

    matches = contains if contains is not None else (text_contains(texts) if texts is not None else None)
    boosted: list[str] = []
    if matches and reading.identifiers and boost_fraction and fused.scores:
        fused, boosted = _boost(fused, matches, reading.identifiers, boost_fraction)
    decision = AdaptiveDecision(
        reading.kind, reading.identifiers, base, effective, lexical_only, tuple(boosted), reason
    )
    return AdaptiveResult(scores=fused.scores, contributions=fused.contributions, decision=decision)


def _boost(
    fused: FusionResult, matches: Contains, identifiers: tuple[str, ...], fraction: float
) -> tuple[FusionResult, list[str]]:
    """Add ``fraction`` of the largest absolute score to each document holding an identifier."""
    amount = fraction * (max(abs(score) for score in fused.scores.values()) or 1.0)
    scores = dict(fused.scores)
    contributions = {doc_id: dict(parts) for doc_id, parts in fused.contributions.items()}
    boosted = [doc_id for doc_id in fused.scores if any(matches(doc_id, ident) for ident in identifiers)]
    for doc_id in boosted:
        scores[doc_id] += amount
        contributions.setdefault(doc_id, {})[BOOST_KEY] = amount
    return ranked(scores, contributions), boosted


def text_contains(texts: Mapping[str, str]) -> Contains:
    """A matcher over ``{doc_id: text}``: the identifier verbatim, any whitespace run matching any other."""

    def contains(doc_id: str, identifier: str) -> bool:
        text = texts.get(doc_id)
        return text is not None and _verbatim(identifier).search(text) is not None

    return contains


@functools.lru_cache(maxsize=256)
def _verbatim(identifier: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in identifier.split())
    return re.compile(rf"(?<!\w){body}(?!\w)")
