"""Per-query fusion weights predicted from the two result lists (query performance prediction).

The best weight between BM25 and kNN varies by query far more than any fixed weight can follow: on
SciFact's train queries, min-max linear fusion at the best fixed weight scores 0.736 nDCG@10 and at each
query's best weight 0.792. Whether a retriever did well for a query shows in the shape of its scores
(how far its top hit stands out, how flat its top ten are) and in how much the two lists agree. These
are post-retrieval predictors in the sense of query performance prediction (Cronen-Townsend, Zhou &
Croft, "Predicting query performance", SIGIR 2002; Shtok, Kurland, Carmel, Raiber & Markovits,
"Predicting query performance by query-drift estimation", ACM TOIS 30(2), 2012), used here as in
QPP-weighted fusion (Markovits, Shtok, Kurland & Carmel, "Predicting query performance for fusion-based
retrieval", CIKM 2012): a small ridge model maps them to the expected nDCG@10 of each candidate weight,
and the weight with the highest prediction fuses this query. Only a client can do this; an engine's
hybrid query fixes its weights in the search pipeline.

The model ships fitted on the default embedding model's lists of three collections (SciFact train, CISI,
MED; ``default_model``), with kNN shares from 0.2 to 0.8. Fitted on two of them, it beats RRF(60) on the
third, for each of the three (docs/fusion-qpp.md). ``esbridge tune`` fits one on an operator's own judgements.
"""

from __future__ import annotations

import functools
import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from esbridge.errors import ConfigError
from esbridge.query.fusion.context import FusionContext
from esbridge.query.fusion.linear import linear
from esbridge.query.fusion.params import reject_unknown, resolve_weights
from esbridge.query.types import FusionDecision, FusionResult, Runs

DEFAULT_MODEL_FILE = "qpp_default.json"
HEAD = 10
"""Predictors read the top ``HEAD`` hits of each list, so they do not depend on the retrieval depth."""

PREDICTORS = (
    "lexical_gap",
    "lexical_tail",
    "lexical_top_z",
    "semantic_gap",
    "semantic_drop",
    "semantic_top_z",
    "overlap",
    "same_top",
)
"""What each predictor measures, over the top ``HEAD`` hits of a list, best first (s1, s2, ..., sn):

- ``lexical_gap``: (s1 - s2) / s1 of BM25; ``lexical_tail``: sn / s1 of BM25 (both scale-free, as BM25
  scores are not comparable between indices);
- ``semantic_gap``: (s1 - s2) / sd and ``semantic_drop``: (s1 - sn) / sd of kNN, where sd is the standard
  deviation of the list's scores (0 when all are equal). Raw kNN score differences depend on the model:
  one model's cosines spread over 0.2-0.7, another's over 0.6-0.9. Divided by the list's own spread they
  are unchanged by any shift or positive scaling of the scores, so a model fitted with one embedding
  model or collection reads another's lists on the same scale;
- ``*_top_z``: (s1 - mean) / sd of the list (0 when all are equal);
- ``overlap``: the share of the top ``HEAD`` ids the two lists have in common (divided by ``HEAD``);
- ``same_top``: 1.0 when both lists rank the same id first, else 0.0.
"""


@dataclass(frozen=True)
class QppModel:
    """A ridge model: for each candidate kNN share, predicted nDCG = intercept + coefficients . z.

    ``z`` is the predictors standardised with ``center`` and ``scale`` (the training means and standard
    deviations). ``coefficients[i][j]`` belongs to predictor ``i`` and share ``j``.
    """

    shares: tuple[float, ...]
    center: tuple[float, ...]
    scale: tuple[float, ...]
    intercepts: tuple[float, ...]
    coefficients: tuple[tuple[float, ...], ...]
    source: str = ""
    embedding_model: str = ""
    """The embedding model whose kNN scores the model was fitted on (its semantic predictors read their
    scale); empty when unknown. A search whose vectors come from another model says so."""

    def __post_init__(self) -> None:
        count = len(PREDICTORS)
        if not self.shares or any(not 0.0 <= share <= 1.0 for share in self.shares):
            raise ConfigError(f"qpp model shares must be kNN shares within [0, 1], got {list(self.shares)}")
        if len(self.center) != count or len(self.scale) != count or len(self.coefficients) != count:
            raise ConfigError(f"qpp model needs center, scale and coefficients for the {count} predictors {PREDICTORS}")
        if len(self.intercepts) != len(self.shares) or any(len(row) != len(self.shares) for row in self.coefficients):
            raise ConfigError("qpp model needs one intercept and one coefficient per predictor for each share")
        numbers = [*self.center, *self.scale, *self.intercepts, *(value for row in self.coefficients for value in row)]
        if any(not math.isfinite(value) for value in numbers) or any(value <= 0 for value in self.scale):
            raise ConfigError("qpp model numbers must be finite, and its scales above 0")

    def predict(self, predictors: Sequence[float]) -> list[float]:
        """Predicted nDCG@10 for each share, in the order of ``shares``."""
        z = [(value - mid) / spread for value, mid, spread in zip(predictors, self.center, self.scale, strict=True)]
        return [
            intercept + math.fsum(z_i * row[j] for z_i, row in zip(z, self.coefficients, strict=True))
            for j, intercept in enumerate(self.intercepts)
        ]

    def choose(self, predictors: Sequence[float]) -> tuple[int, list[float]]:
        """The index of the share with the highest prediction (ties: the share nearest 0.5), and the predictions."""
        predicted = self.predict(predictors)
        best = max(range(len(predicted)), key=lambda j: (predicted[j], -abs(self.shares[j] - 0.5)))
        return best, predicted

    def as_params(self) -> dict[str, Any]:
        """The model as ``pipeline.fusion_params["model"]`` takes it (TOML- and JSON-friendly)."""
        return {
            "shares": list(self.shares),
            "center": list(self.center),
            "scale": list(self.scale),
            "intercepts": list(self.intercepts),
            "coefficients": [list(row) for row in self.coefficients],
            "source": self.source,
            "embedding_model": self.embedding_model,
        }

    @classmethod
    def from_params(cls, given: Mapping[str, Any]) -> QppModel:
        fields = ("shares", "center", "scale", "intercepts", "coefficients")
        missing = [name for name in fields if name not in given]
        unknown = sorted(set(given) - {*fields, "source", "embedding_model"})
        if missing or unknown:
            raise ConfigError(
                f"qpp model needs exactly {', '.join(fields)} (and optionally source and embedding_model); "
                f"missing {missing}, unknown {unknown}"
            )
        try:
            return cls(
                tuple(float(v) for v in given["shares"]),
                tuple(float(v) for v in given["center"]),
                tuple(float(v) for v in given["scale"]),
                tuple(float(v) for v in given["intercepts"]),
                tuple(tuple(float(v) for v in row) for row in given["coefficients"]),
                str(given.get("source", "")),
                str(given.get("embedding_model", "")),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"qpp model numbers must be lists of numbers: {exc}") from exc


@dataclass(frozen=True)
class QppDecision:
    """Which share fused the query and why, for explanations."""

    share: float | None
    """The kNN share used; None when the predictors could not be read and the base weights were used."""
    predictors: dict[str, float]
    predicted: dict[str, float]
    """Predicted nDCG@10 per candidate share (keys formatted like ``"0.6"``)."""
    effective_weights: dict[str, float]
    reason: str
    fitted_for: str = ""
    """The model's ``embedding_model``: the one whose kNN scores it was fitted on."""


@dataclass(frozen=True)
class QppResult(FusionResult):
    decision: QppDecision = field(kw_only=True)
    caution: str | None = field(default=None, kw_only=True)

    def describe(self) -> FusionDecision:
        decision = self.decision
        return FusionDecision(
            reason=decision.reason,
            effective_weights=dict(decision.effective_weights),
            knn_share=decision.share,
            predictors=dict(decision.predictors),
            predicted_ndcg_at_10=dict(decision.predicted),
            caution=self.caution,
        )


def predictors(lexical: Mapping[str, float], semantic: Mapping[str, float]) -> tuple[float, ...] | None:
    """The ``PREDICTORS`` of one query's two runs, or None when either has fewer than 2 hits or BM25's
    best score is not positive (its ratios would mean nothing)."""
    lex = heapq.nlargest(HEAD, lexical.items(), key=lambda pair: pair[1])
    sem = heapq.nlargest(HEAD, semantic.items(), key=lambda pair: pair[1])
    if len(lex) < 2 or len(sem) < 2 or lex[0][1] <= 0:
        return None
    lex_scores = [score for _, score in lex]
    sem_scores = [score for _, score in sem]
    top = lex_scores[0]
    common = {item for item, _ in lex} & {item for item, _ in sem}
    return (
        (top - lex_scores[1]) / top,
        lex_scores[-1] / top,
        _standardised(lex_scores[0], lex_scores),
        _standardised(sem_scores[0] - sem_scores[1], sem_scores, centred=False),
        _standardised(sem_scores[0] - sem_scores[-1], sem_scores, centred=False),
        _standardised(sem_scores[0], sem_scores),
        len(common) / HEAD,
        1.0 if lex[0][0] == sem[0][0] else 0.0,
    )


def _standardised(value: float, scores: Sequence[float], *, centred: bool = True) -> float:
    """``(value - mean) / sd`` of ``scores`` (a difference of two scores: ``value / sd``); 0 when sd is 0."""
    mean = math.fsum(scores) / len(scores)
    deviation = math.sqrt(math.fsum((score - mean) ** 2 for score in scores) / len(scores))
    if deviation <= 0:
        return 0.0
    return ((value - mean) if centred else value) / deviation


def qpp(
    runs: Runs,
    *,
    weights: Mapping[str, float] | None = None,
    context: FusionContext | None = None,
    lexical: str = "bm25",
    semantic: str = "knn",
    model: QppModel | Mapping[str, Any] | None = None,
    **unknown: Any,
) -> QppResult:
    """Min-max linear fusion (``linear``) with the kNN share of the weights chosen per query::

        share = argmax_s model.predict(predictors(run_lexical, run_semantic))[s]
        score(d) = w_lexical * (1 - share) * minmax_lexical(d) + w_semantic * share * minmax_semantic(d)

    ``weights`` (default 1.0 each) multiply the chosen shares, so the configured balance still holds.
    Without both runs, or with a run too short to read (``predictors`` is None), the query is fused by
    ``linear`` with ``weights`` alone, and the decision says so. ``model`` defaults to ``default_model()``.
    When ``context`` says the vectors come from another model than the one ``model`` was fitted on, the
    result carries a caution.
    """
    reject_unknown("qpp", unknown, ("weights", "context", "lexical", "semantic", "model"))
    chosen = default_model() if model is None else model if isinstance(model, QppModel) else _parsed(model)
    resolved = resolve_weights(runs, weights)
    read = predictors(runs[lexical], runs[semantic]) if lexical in runs and semantic in runs else None
    if read is None:
        reason = (
            f"no {lexical!r} and {semantic!r} runs to read"
            if lexical not in runs or semantic not in runs
            else "a run too short to read (fewer than 2 hits, or no positive BM25 score)"
        )
        fused = linear(runs, weights=resolved)
        decision = QppDecision(None, {}, {}, resolved, f"{reason}: plain linear fusion", chosen.embedding_model)
        return QppResult(scores=fused.scores, contributions=fused.contributions, decision=decision)
    best, predicted = chosen.choose(read)
    share = chosen.shares[best]
    effective = dict(resolved)
    effective[lexical] = resolved[lexical] * (1.0 - share)
    effective[semantic] = resolved[semantic] * share
    fused = linear(runs, weights=effective)
    vectors_from = context.vectors_from if context is not None else None
    caution = None
    if chosen.embedding_model and vectors_from and vectors_from != chosen.embedding_model:
        # The predictors are scale-free, but how a model's score shapes relate to its quality is not:
        # fitted on one model and used on another, the shipped model scored like equal weights.
        caution = (
            f"the qpp model was fitted on kNN scores of {chosen.embedding_model}, this search's vectors come "
            f"from {vectors_from}: its choice of share may be off; esbridge tune fits one for this index"
        )
    decision = QppDecision(
        share,
        {name: round(value, 6) for name, value in zip(PREDICTORS, read, strict=True)},
        {f"{s:g}": round(value, 6) for s, value in zip(chosen.shares, predicted, strict=True)},
        effective,
        f"kNN share {share:g}: the highest predicted nDCG@10 of shares {', '.join(f'{s:g}' for s in chosen.shares)}",
        chosen.embedding_model,
    )
    return QppResult(scores=fused.scores, contributions=fused.contributions, decision=decision, caution=caution)


@functools.cache
def default_model() -> QppModel:
    """The shipped model (``qpp_default.json``; how it was made is in its ``source``)."""
    text = resources.files("esbridge.query.fusion").joinpath(DEFAULT_MODEL_FILE).read_text(encoding="utf-8")
    return QppModel.from_params(json.loads(text))


_PARSED: dict[int, tuple[Mapping[str, Any], QppModel]] = {}


def _parsed(given: Mapping[str, Any]) -> QppModel:
    """``QppModel.from_params(given)``, once per mapping object: a configured model (``fusion_params``)
    is the same object on every search, and parsing it each time would cost 13 us per query."""
    known = _PARSED.get(id(given))
    if known is not None and known[0] is given:  # the reference kept below keeps the id from being reused
        return known[1]
    model = QppModel.from_params(given)
    if len(_PARSED) >= 64:
        _PARSED.clear()
    _PARSED[id(given)] = (given, model)
    return model
