"""An embedder that embeds each distinct text once per model and keeps the vectors on disk."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from esbridge.embeddings.base import Embedder, close_model, model_profile
from esbridge.embeddings.cache import EmbeddingCache, text_key
from esbridge.embeddings.identity import ModelIdentity, identity_of
from esbridge.embeddings.profiles import ModelProfile
from esbridge.errors import EmbeddingError, EsbridgeWarning


@dataclass(frozen=True)
class CacheStats:
    """Texts answered without the model (``hits``) and distinct texts the model embedded (``misses``).

    A text repeated within one call is embedded once; its repeats count as hits. So
    ``hits + misses`` is the number of texts asked for, and ``misses`` the model's work.
    """

    hits: int = 0
    misses: int = 0


class CachedEmbedder:
    """An ``Embedder`` that asks ``cache`` first and embeds only the misses, ``batch_size`` at a time.

    Each batch is stored as soon as it is embedded, so an interrupted run loses at most one batch. A cache that
    cannot be written is warned about once and left alone; one that cannot be read is an ``EmbeddingError``.
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache, *, batch_size: int = 256) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.embedder = embedder
        self.cache = cache
        self._batch_size = batch_size
        self._hits = 0
        self._misses = 0
        self._unwritable = False

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def identity(self) -> str:
        return self.embedder.identity

    @property
    def model_identity(self) -> ModelIdentity:
        return identity_of(self.embedder)

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def max_tokens(self) -> int:
        return self.embedder.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.embedder.count_tokens(text)

    @property
    def load_problem(self) -> str | None:
        """Why the model could not be loaded again after it was (``ProcessEmbedder``); None otherwise."""
        problem = getattr(self.embedder, "load_problem", None)
        return problem if isinstance(problem, str) else None

    @property
    def prompts(self) -> ModelProfile:
        return model_profile(self.embedder)

    @property
    def stats(self) -> CacheStats:
        """Totals since this embedder was made (or ``reset_stats``)."""
        return CacheStats(hits=self._hits, misses=self._misses)

    def reset_stats(self) -> None:
        self._hits = self._misses = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [text_key(text) for text in texts]
        vectors = self.cache.get_many(self.identity, keys, self.dimension)
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in vectors}
        self._hits += len(texts) - len(missing)
        pending = list(missing.items())
        for start in range(0, len(pending), self._batch_size):
            batch = pending[start : start + self._batch_size]
            embedded = self.embedder.embed([text for _, text in batch])
            self._check(embedded, len(batch))
            batch_vectors = {key: vector for (key, _), vector in zip(batch, embedded, strict=True)}
            self._store(batch_vectors)
            vectors.update(batch_vectors)
            self._misses += len(batch)
        return [list(vectors[key]) for key in keys]

    def _store(self, vectors: dict[bytes, list[float]]) -> None:
        """Keep ``vectors`` in the cache; a cache that cannot be written (locked by another process past its
        timeout, a full disk) costs only their reuse, so the run goes on with them and stops writing to it."""
        if self._unwritable:
            return
        try:
            self.cache.put_many(self.identity, vectors.items())
        except EmbeddingError as exc:
            self._unwritable = True
            warnings.warn(
                f"{exc.reason}; the vectors are used all the same, and this run writes no more to the cache "
                "(the next one embeds again what it did not keep)",
                EsbridgeWarning,
                stacklevel=3,
            )

    def _check(self, embedded: list[list[float]], expected: int) -> None:
        if len(embedded) != expected:
            raise EmbeddingError(f"returned {len(embedded)} vectors for {expected} texts", model=self.name)
        for vector in embedded:
            if len(vector) != self.dimension:
                raise EmbeddingError(
                    f"returned a {len(vector)}-dimensional vector, expected {self.dimension}", model=self.name
                )

    def close(self) -> None:
        """Closes the cache, and the model too when it holds resources (a ``ProcessEmbedder``'s children):
        a CachedEmbedder owns the model it is given."""
        try:
            self.cache.close()
        finally:
            close_model(self.embedder)

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
