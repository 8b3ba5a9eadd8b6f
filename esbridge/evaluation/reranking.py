"""Re-rankers of an evaluation run: built once per setting, each (query, text) pair scored once."""

from __future__ import annotations

from collections.abc import Sequence

from esbridge.config.pipeline import RerankSettings
from esbridge.query.rerank import RERANKERS, Reranker


class MemoReranker:
    """A ``Reranker`` that scores each (query, text) pair once per run: the top and the deep ranking of a
    query re-rank the same head."""

    def __init__(self, reranker: Reranker) -> None:
        self.name = reranker.name
        self._reranker = reranker
        self._scores: dict[tuple[str, str], float] = {}

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        todo = [text for text in dict.fromkeys(texts) if (query, text) not in self._scores]
        if todo:
            self._scores.update(zip(((query, text) for text in todo), self._reranker.score(query, todo), strict=True))
        return [self._scores[(query, text)] for text in texts]


class Rerankers:
    """One memoized re-ranker per distinct re-ranking setting of a run's configurations."""

    def __init__(self) -> None:
        self._made: dict[str, MemoReranker] = {}

    def get(self, settings: RerankSettings) -> Reranker | None:
        if not settings.enabled:
            return None
        key = f"{settings.name}|{settings.model}|{settings.backend}|{settings.precision}"
        if key not in self._made:
            self._made[key] = MemoReranker(RERANKERS.get_named(settings.name)(settings))
        return self._made[key]
