"""What an ingest (or ``esbridge embed --missing``) did, as ``esbridge ingest --json`` reports it, and the
embedding of a window of chunks that counts into it: vectors the model computed apart from those the
embedding cache gave."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from esbridge.embeddings.base import Embedder, passage_vectors, passages_cut, seen_as_nothing
from esbridge.embeddings.cached import CacheStats
from esbridge.ingest.model import Chunk


@dataclass
class IngestReport:
    source: str
    index: str
    documents_indexed: int = 0
    chunks_indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    embedded: int = 0
    """chunks whose vector the model computed in this run"""
    from_cache: int = 0
    """chunks whose vector the embedding cache gave (a text embedded before, or earlier in this run)"""
    without_vectors: int = 0
    cut_by_model: int = 0
    """chunks embedded whose text holds more tokens than the model reads"""
    seen_as_nothing: int = 0
    """chunks whose text shows something but in which the model saw nothing (a zero vector): left without one"""
    failed: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model_recorded: str | None = None
    """the model this run recorded in the index's ``_meta`` as the one that made its vectors"""
    timings: dict[str, float] = field(default_factory=lambda: {"parse_s": 0.0, "embed_s": 0.0, "index_s": 0.0})

    def count_vectors(self, given: int, from_cache: int) -> None:
        """``given`` chunks got a vector, ``from_cache`` of them from the embedding cache."""
        self.embedded += given - from_cache
        self.from_cache += from_cache

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "index": self.index,
            "documents_indexed": self.documents_indexed,
            "chunks_indexed": self.chunks_indexed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "embedded": self.embedded,
            "from_cache": self.from_cache,
            "without_vectors": self.without_vectors,
            "failed": self.failed,
            "warnings": self.warnings,
            "model_recorded": self.model_recorded,
            "timings": {key: round(value, 3) for key, value in self.timings.items()},
        }


class Timer:
    """Adds the time spent inside it to ``timings[key]``."""

    def __init__(self, timings: dict[str, float], key: str) -> None:
        self.timings, self.key = timings, key

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.timings[self.key] += time.perf_counter() - self.start


def cache_hits(embedder: Embedder) -> int:
    """The vectors ``embedder`` has answered from its embedding cache so far; 0 for one without a cache."""
    stats = getattr(embedder, "stats", None)
    return stats.hits if isinstance(stats, CacheStats) else 0


def embed_window(window: Sequence[Chunk], embedder: Embedder | None, report: IngestReport) -> list[list[float] | None]:
    """The vectors of ``window``'s chunks (None each without a model), counted into ``report``."""
    if embedder is None:
        return [None] * len(window)
    texts = [chunk.embedding_text for chunk in window]
    hits = cache_hits(embedder)
    with Timer(report.timings, "embed_s"):
        vectors = passage_vectors(embedder, texts)
        report.cut_by_model += passages_cut(embedder, texts)
    report.seen_as_nothing += seen_as_nothing(texts, vectors)
    report.count_vectors(sum(vector is not None for vector in vectors), cache_hits(embedder) - hits)
    return vectors
