"""Optional re-ranking of the top candidates with a cross-encoder (sentence-transformers ``CrossEncoder``).

Re-rankers are plugins like fusion methods: the ``esbridge.rerankers`` entry-point group maps a name
to a factory taking ``RerankSettings``; esbridge declares its ``cross-encoder`` there too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from esbridge.config.pipeline import RerankSettings
from esbridge.embeddings.profiles import canonical_name
from esbridge.embeddings.resolve import with_offline_hint
from esbridge.embeddings.sentence_transformer import no_weight_loading_progress_bar, refuse_a_tokenizer_without_words
from esbridge.errors import RERANKER_ROLE as ROLE
from esbridge.errors import DependencyMissing, EmbeddingError, ModelUnavailable
from esbridge.plugins import RERANKER_GROUP, Registry


class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """A relevance score per text, higher is better."""
        ...


class RerankerFactory(Protocol):
    def __call__(self, settings: RerankSettings) -> Reranker: ...


RERANKERS: Registry[RerankerFactory] = Registry("re-ranker", RERANKER_GROUP)

_SCORING_HEADS = ("ForSequenceClassification", "ForCausalLM")


class CrossEncoderReranker:
    """Scores (query, text) pairs jointly with a cross-encoder model from a name or a local folder."""

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 16, max_length: int = 512) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise DependencyMissing("sentence-transformers", purpose="cross-encoder re-ranking") from exc
        path = Path(model).expanduser()
        local = path.is_dir()  # loaded with local_files_only, as the embedding model's folder is
        if not local and (path.is_absolute() or model.startswith((".", "~"))):  # not a hub id: say what it is
            raise ModelUnavailable(f"model folder {path} does not exist", model=model, role=ROLE)
        if not local:
            model = canonical_name(model) or model  # a short alias is no hub repository
        location = str(path.resolve()) if local else model
        if local:  # before loading: transformers would print its report of the head it made up
            _require_scoring_head(_architectures_in(path), model)
        try:
            with no_weight_loading_progress_bar(warnings=False):
                self._model = CrossEncoder(location, device=device, max_length=max_length, local_files_only=local)
        except Exception as exc:  # the library raises many kinds; all mean "no model"
            reason = f"cannot load the cross-encoder: {type(exc).__name__}: {exc}"
            raise ModelUnavailable(reason if local else with_offline_hint(reason), model=model, role=ROLE) from exc
        config = getattr(self._model, "config", None)
        _require_scoring_head([str(kind) for kind in getattr(config, "architectures", None) or []], model)
        refuse_a_tokenizer_without_words(getattr(self._model, "tokenizer", None), model, ROLE)
        self.name = model
        self.batch_size = batch_size

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        try:
            scores: Any = self._model.predict(
                [(query, text) for text in texts], batch_size=self.batch_size, show_progress_bar=False
            )
        except Exception as exc:  # torch and transformers raise their own kinds
            raise EmbeddingError(f"re-ranking {len(texts)} text(s) failed: {exc}", model=self.name, role=ROLE) from exc
        return [float(value) for value in scores]


def _architectures_in(folder: Path) -> list[str]:
    """The architectures a model folder's ``config.json`` names; none when it cannot be read (the loader says why)."""
    try:
        named = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures")
    except (OSError, ValueError, AttributeError):
        return []
    return [str(kind) for kind in named] if isinstance(named, list) else []


def _require_scoring_head(architectures: Sequence[str], name: str) -> None:
    """Refuse a model whose configuration names no head to score with (an embedding model, a bare encoder):
    sentence-transformers gives it a sequence-classification head of random weights, which would re-rank by
    noise. A causal language model scores with its "yes" and "no" tokens (sentence-transformers' LogitScore)."""
    if not architectures or any(kind.endswith(_SCORING_HEADS) for kind in architectures):
        return
    raise ModelUnavailable(
        f"its config.json names {', '.join(architectures)}, a model without a sequence-classification head "
        "(...ForSequenceClassification): it is no cross-encoder, and loaded as one it would score with a head "
        "of random weights (an embedding model belongs in [embedding] model)",
        model=name,
        role=ROLE,
    )


def cross_encoder(settings: RerankSettings) -> Reranker:
    """The configured cross-encoder on the configured backend (``pipeline.rerank.backend``)."""
    if not settings.model:
        raise ModelUnavailable("pipeline.rerank.model names no cross-encoder model")
    if settings.backend == "onnx":
        from esbridge.embeddings.onnx_cross_encoder import OnnxCrossEncoder

        return OnnxCrossEncoder(settings.model, precision=settings.precision, batch_size=settings.batch_size)
    return CrossEncoderReranker(settings.model, device=settings.device, batch_size=settings.batch_size)


def rerank_text(source: Mapping[str, Any]) -> str:
    """What the cross-encoder reads of a result: its title and body."""
    return "\n".join(str(source.get(field) or "") for field in ("title", "body") if source.get(field))


@dataclass(frozen=True)
class RerankTerms:
    """How one re-ranked result got its new score: ``base + combined``, where ``combined`` is ``weight`` times its
    re-ranker score and ``1 - weight`` times its score before re-ranking, each min-max normalized over the head
    (by its ``(low, high)`` there; 1 when they are equal)."""

    reranker_score: float
    reranker_range: tuple[float, float]
    score_before: float
    before_range: tuple[float, float]
    weight: float
    combined: float
    base: float
    """1 above the best score of the candidates not re-ranked (1 when there are none)"""


@dataclass(frozen=True)
class Reranked:
    scores: dict[str, float]
    """The top ``n`` in the re-ranker's order above every other candidate, which keep their order."""
    rerank_scores: dict[str, float]
    terms: dict[str, RerankTerms] = field(default_factory=dict)


def rerank(
    scores: Mapping[str, float],
    texts: Mapping[str, str],
    query: str,
    reranker: Reranker,
    top: int,
    *,
    weight: float = 1.0,
) -> Reranked:
    """Re-order the ``top`` best candidates; the rest stay below, as they were.

    The head's new order is ``weight`` times the re-ranker's score plus ``1 - weight`` times the fused
    score, each min-max normalized over the head (a convex combination of the two stages, as in
    Nogueira et al. 2019, "Multi-Stage Document Ranking with BERT", applied to normalized scores).
    ``weight`` 1 is the re-ranker's order alone.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    ordered = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    head, tail = ordered[:top], ordered[top:]
    if not head:
        return Reranked(dict(ordered), {})
    raw = _scored(reranker, query, [texts.get(item, "") for item, _ in head])
    by_reranker = dict(zip((item for item, _ in head), raw, strict=True))
    reranked = _min_max(by_reranker)
    fused = _min_max(dict(head))
    combined = {item: weight * reranked[item] + (1.0 - weight) * fused[item] for item in by_reranker}
    base = max((score for _, score in tail), default=0.0) + 1.0
    result: dict[str, float] = {}
    # Above the best of the rest by a margin, keeping the combined order and relative gaps.
    for item in sorted(combined, key=lambda item: (-combined[item], -by_reranker[item], item)):
        result[item] = base + combined[item]
    result.update(tail)
    ranges = _range(by_reranker), _range(dict(head))
    terms = {
        item: RerankTerms(by_reranker[item], ranges[0], score, ranges[1], weight, combined[item], base)
        for item, score in head
    }
    return Reranked(result, by_reranker, terms)


def _scored(reranker: Reranker, query: str, texts: Sequence[str]) -> list[float]:
    """The re-ranker's scores of ``texts``; an ``EmbeddingError`` naming it when it fails or answers with anything
    but one finite number per text (a plugin's own exception included), so that the search keeps its fused order."""
    name = getattr(reranker, "name", type(reranker).__name__)
    try:
        raw = list(reranker.score(query, texts))
    except EmbeddingError:
        raise
    except Exception as exc:  # a plugin raises whatever its library does
        raise EmbeddingError(f"{type(exc).__name__}: {exc}", model=name, role=ROLE) from exc
    if len(raw) != len(texts):
        raise EmbeddingError(f"gave {len(raw)} scores for {len(texts)} texts", model=name, role=ROLE)
    try:
        scores = [float(score) for score in raw]
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"gave a score that is not a number: {exc}", model=name, role=ROLE) from exc
    if (bad := next((score for score in scores if not math.isfinite(score)), None)) is not None:
        raise EmbeddingError(f"gave a score that is not a finite number: {bad}", model=name, role=ROLE)
    return scores


def _range(scores: Mapping[str, float]) -> tuple[float, float]:
    return min(scores.values()), max(scores.values())


def _min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores mapped onto [0, 1] by the lowest and highest; all 1 when they are equal."""
    low, high = min(scores.values()), max(scores.values())
    spread = high - low
    return {item: (score - low) / spread if spread > 0 else 1.0 for item, score in scores.items()}
