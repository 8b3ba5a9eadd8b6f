"""Optional re-ranking of the top candidates with a cross-encoder (sentence-transformers ``CrossEncoder``).

Re-rankers are plugins like fusion methods: the ``esbridge.rerankers`` entry-point group maps a name
to a factory taking ``RerankSettings``; esbridge declares its ``cross-encoder`` there too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from esbridge.config.pipeline import RerankSettings
from esbridge.errors import DependencyMissing, ModelUnavailable
from esbridge.plugins import RERANKER_GROUP, Registry


class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """A relevance score per text, higher is better."""
        ...


class RerankerFactory(Protocol):
    def __call__(self, settings: RerankSettings) -> Reranker: ...


RERANKERS: Registry[RerankerFactory] = Registry("re-ranker", RERANKER_GROUP)


class CrossEncoderReranker:
    """Scores (query, text) pairs jointly with a cross-encoder model from a name or a local folder."""

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 16, max_length: int = 512) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise DependencyMissing("sentence-transformers", purpose="cross-encoder re-ranking") from exc
        local = Path(model).expanduser().is_dir()
        if local:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self._model = CrossEncoder(model, device=device, max_length=max_length, local_files_only=local)
        except Exception as exc:  # the library raises many kinds; all mean "no model"
            raise ModelUnavailable(f"cannot load the cross-encoder: {type(exc).__name__}: {exc}", model=model) from exc
        self.name = model
        self.batch_size = batch_size

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        scores: Any = self._model.predict(
            [(query, text) for text in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(value) for value in scores]


def cross_encoder(settings: RerankSettings) -> Reranker:
    if not settings.model:
        raise ModelUnavailable("pipeline.rerank.model names no cross-encoder model")
    return CrossEncoderReranker(settings.model, device=settings.device, batch_size=settings.batch_size)


@dataclass(frozen=True)
class Reranked:
    scores: dict[str, float]
    """The top ``n`` in the re-ranker's order above every other candidate, which keep their order."""
    rerank_scores: dict[str, float]


def rerank(scores: Mapping[str, float], texts: Mapping[str, str], query: str, reranker: Reranker, top: int) -> Reranked:
    """Re-order the ``top`` best candidates by the re-ranker's scores; the rest stay below, as they were."""
    ordered = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    head, tail = ordered[:top], ordered[top:]
    if not head:
        return Reranked(dict(ordered), {})
    raw = reranker.score(query, [texts.get(item, "") for item, _ in head])
    by_reranker = dict(zip((item for item, _ in head), raw, strict=True))
    low, high = min(raw), max(raw)
    spread = high - low
    floor = max((score for _, score in tail), default=0.0)
    result: dict[str, float] = {}
    # Above the best of the rest by a margin, keeping the re-ranker's order and relative gaps.
    for item in sorted(by_reranker, key=lambda item: (-by_reranker[item], item)):
        share = (by_reranker[item] - low) / spread if spread > 0 else 1.0
        result[item] = floor + 1.0 + share
    result.update(tail)
    return Reranked(result, by_reranker)
