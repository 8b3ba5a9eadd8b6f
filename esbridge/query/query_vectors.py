"""The query's vector: embedded in a worker thread, cached, optionally widened by concept expansion.

The embedding is the longest step of a hybrid search, so it is started before anything else
(``start``) and awaited only when a semantic retriever needs it (``vector``). Nothing here fails a
search: no model, a timeout or a model error give no vector and a warning, and the search goes on
lexical-only.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field, replace

from cachetools import TTLCache

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.base import Embedder, start_embedding
from esbridge.engines.base import AsyncEngine
from esbridge.query.concepts import expand_query
from esbridge.query.deadline import capped, halfway, within
from esbridge.query.timing import elapsed_ms

NOT_EMBEDDED = "the query was not embedded within"
"""How the warning of a query embedding given up on for time begins."""


@dataclass(frozen=True)
class Embedding:
    """A query embedding under way in a worker thread."""

    text: str
    vectors: asyncio.Future[list[list[float]]]
    started: float

    def cancel(self) -> None:
        self.vectors.cancel()


@dataclass(frozen=True)
class QueryVector:
    """The vector a semantic retriever searches with (None: there is none, ``warnings`` say why)."""

    vector: list[float] | None
    warnings: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    concept_terms: tuple[str, ...] = ()


class QueryVectors:
    """Embeds queries with one model, keeping recent vectors (``pipeline.cache.embeddings``)."""

    def __init__(self, embedder: Embedder | None, pipeline: PipelineSettings, engine: AsyncEngine, index: str) -> None:
        self.embedder = embedder
        self.pipeline = pipeline
        self.engine = engine
        self.index = index
        cache = pipeline.cache
        self._cache: TTLCache[str, list[float]] | None = (
            TTLCache(cache.embeddings, cache.embeddings_ttl_s) if cache.embeddings else None
        )

    def start(self, text: str) -> Embedding | None:
        """``text``'s embedding, running in a worker thread from now on; None with no model or a cached vector."""
        if self.embedder is None or (self._cache is not None and text in self._cache):
            return None
        return _embedding(self.embedder, text)

    async def vector(self, query: str, embedding: Embedding | None = None, *, ends: float = math.inf) -> QueryVector:
        """The query's vector or, with concept expansion on, the vector of the query plus its nearest concepts.

        ``embedding``: the query's embedding if already started (``start``); ``ends``: the search's deadline
        (``time.perf_counter()``), which cuts the embedding's timeout short. The concept index's read has the kNN
        retriever's timeout, or half the time left if less (``halfway``: kNN keeps the rest); without its answer
        in time the query's own vector is used, with a warning.
        """
        first = await self._embed(query, embedding, ends)
        if first.vector is None or not self.pipeline.concepts.enabled:
            return first
        started = time.perf_counter()
        timeout_s = capped(self.pipeline.timeout_s("knn"), halfway(ends))
        terms = self.pipeline.concepts.terms
        try:
            async with within(timeout_s):
                expansion = await expand_query(
                    self.engine, self.index, query, first.vector, terms=terms, timeout_s=timeout_s
                )
        except (asyncio.TimeoutError, errors.EngineError) as exc:
            timings = {**first.timings, "concepts": elapsed_ms(started)}
            timed_out = isinstance(exc, asyncio.TimeoutError)
            why = f"the concept index did not answer within {timeout_s:g}s" if timed_out else exc
            return QueryVector(first.vector, (*first.warnings, f"concept expansion skipped: {why}"), timings)
        timings = {**first.timings, "concepts": elapsed_ms(started)}
        warnings = (*first.warnings, f"concept expansion: {expansion.partial}") if expansion.partial else first.warnings
        if not expansion.terms:
            return QueryVector(first.vector, warnings, timings)
        widened = await self._embed(expansion.text, ends=ends)
        return QueryVector(
            widened.vector or first.vector,
            (*warnings, *widened.warnings),
            {**timings, **widened.timings},
            tuple(expansion.terms),
        )

    async def _embed(self, text: str, embedding: Embedding | None = None, ends: float = math.inf) -> QueryVector:
        if self.embedder is None:
            return QueryVector(None, ("no embedding model: answered with BM25 only",))
        if self._cache is not None and (cached := self._cache.get(text)) is not None:
            return QueryVector(cached)
        if embedding is None or embedding.text != text:
            embedding = _embedding(self.embedder, text)
        warning = None
        vector = None
        timeout_s = capped(self.pipeline.embed_timeout_s, ends)
        try:
            async with within(timeout_s):
                vector = (await embedding.vectors)[0]
        except asyncio.TimeoutError:
            warning = f"{NOT_EMBEDDED} {timeout_s:g}s"
        except errors.EsbridgeError as exc:
            warning = f"the query could not be embedded: {exc}"
        timings = {"embed": elapsed_ms(embedding.started)}
        if vector is None:
            return QueryVector(None, (warning,) if warning else (), timings)
        if self._cache is not None:
            self._cache[text] = vector
        return QueryVector(vector, (), timings)


class SearchVectors:
    """One search's query vectors: each text is embedded once however many retrieval rounds ask for it (the
    deeper rounds of a collapsed search, the client-side path after a failed native request), with or without
    the embedding cache. A vector that could not be made is not tried again: the rounds answer lexical-only."""

    def __init__(self, vectors: QueryVectors | SearchVectors, ends: float = math.inf) -> None:
        self._vectors = vectors
        self.ends = ends
        """the search's deadline (``time.perf_counter()``)"""
        self._known: dict[str, QueryVector] = {}
        self.timings: dict[str, float] = {}
        """the steps of making the search's vectors (embed, concepts), each once"""

    def start(self, text: str) -> Embedding | None:
        return None if text in self._known else self._vectors.start(text)

    async def vector(self, query: str, embedding: Embedding | None = None, *, ends: float = math.inf) -> QueryVector:
        """As ``QueryVectors.vector`` by the search's deadline, its timings kept in ``timings`` rather than
        returned, so that rounds that reuse the vector do not count its making again."""
        if (known := self._known.get(query)) is None:
            known = await self._vectors.vector(query, embedding, ends=min(ends, self.ends))
            self._known[query] = known
            self.timings.update(known.timings)
        return replace(known, timings={})


def _embedding(embedder: Embedder, text: str) -> Embedding:
    started = time.perf_counter()
    return Embedding(text, start_embedding(embedder, [text]), started)
