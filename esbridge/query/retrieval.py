"""Retrieval strategies: how one search's retrievers reach the engine, and what came back.

* ``concurrent`` (``pipeline.execution = "concurrent"``): the query's embedding starts, the lexical
  retrievers go out while it runs, the semantic ones follow the vector; each has its own timeout.
* ``msearch``: embed first, then every retriever in one ``_msearch`` round trip (separate requests if
  that fails).
* ``native``: one request in which the engine runs and fuses both retrievers (native hybrid).

A retriever that fails degrades the answer (its warning says why) instead of failing it; a missing index
fails the search. Each strategy returns a ``Retrieved``; nothing is handed in to be filled.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from esbridge import errors
from esbridge.config.fields import canonical_source
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import AsyncEngine, Hit, SearchResult
from esbridge.query.deadline import capped, with_timeout, within
from esbridge.query.native import plan as native
from esbridge.query.query_vectors import QueryVector, QueryVectors, SearchVectors
from esbridge.query.retrievers import RETRIEVERS, RetrievalContext, Retriever, request_bodies
from esbridge.query.timing import elapsed_ms

_UNANSWERABLE = (errors.IndexNotFound, errors.IndexUnavailable)
"""Errors no other retriever can work around: the search fails with them (a missing or a red index)."""

# How much longer than the slowest retriever's own timeout a whole _msearch may take.
_MSEARCH_MARGIN_S = 1.0


@dataclass(frozen=True)
class Retrieved:
    """What the retrievers of one search returned."""

    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    """retriever name -> id -> score, best first; ``{"native": ...}`` when the engine fused"""
    sources: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """id -> stored fields"""
    semantic: dict[str, bool] = field(default_factory=dict)
    """retriever name -> whether it is a semantic (vector) retriever"""
    warnings: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    concept_terms: tuple[str, ...] = ()
    native: bool = False
    """the engine fused the retrievers itself"""
    explanations: dict[str, Any] = field(default_factory=dict)
    """id -> the engine's own score explanation (native hybrid with explain)"""
    partial: bool = False
    """an answer lacked shards, or the engine's time limit cut it short (``SearchResult.partial``)"""
    rejected: errors.RequestRejected | None = None
    """when every retriever failed because the engine refused its request: the first refusal"""
    timed_out: bool = False
    """every retriever asked failed by not answering in time (a hung or overloaded engine, not a refused one)"""
    explained: tuple[str, ...] = ()
    """what the retrieval did that the answer explains (``details.fusion_decision``) rather than warns of"""


@dataclass(frozen=True)
class NativeFailure:
    """A native hybrid request that failed: the engine's error, or why (no answer in time), and what it took."""

    error: errors.EngineError | str
    ms: float

    def __str__(self) -> str:
        return str(self.error)


@dataclass(frozen=True)
class _Answer:
    result: SearchResult | None
    warning: str | None
    ms: float
    merged: bool = False
    """several requests' hits (kNN per entity type): each request was cut at its own k, not at ``top_k``"""
    partial: bool = False
    error: errors.EngineError | None = None
    timed_out: bool = False


def _answered(name: str, result: SearchResult, ms: float) -> _Answer:
    """An engine's answer, with a warning when it lacks shards or was cut short by the engine's time limit."""
    if result.partial:
        return _Answer(result, f"{name}: {result.partial}", ms, partial=True)
    return _Answer(result, None, ms)


class Retrieval:
    """Runs the configured retrievers of one index."""

    def __init__(
        self,
        engine: AsyncEngine,
        index: str,
        pipeline: PipelineSettings,
        vectors: QueryVectors | SearchVectors,
        ends: float = math.inf,
    ) -> None:
        self.engine = engine
        self.index = index
        self.pipeline = pipeline
        self.vectors = vectors
        self.ends = ends
        """the search's deadline (``time.perf_counter()``): no retriever waits past it, whatever its timeout"""

    def for_search(self, ends: float = math.inf) -> tuple[Retrieval, SearchVectors]:
        """This retrieval for one search ending by ``ends``, whose query is embedded once however many rounds it
        runs, and the search's vectors (their timings)."""
        vectors = SearchVectors(self.vectors, ends)
        return Retrieval(self.engine, self.index, self.pipeline, vectors, ends), vectors

    def _timeout_s(self, name: str) -> float:
        return capped(self.pipeline.timeout_s(name), self.ends)

    async def client_side(
        self, context: RetrievalContext, *, lexical_only: bool, semantic_fallback: bool = False
    ) -> Retrieved:
        """Every retriever of the pipeline (only the lexical ones with ``lexical_only``), as configured.

        ``semantic_fallback``: the lexical retrievers were chosen for this query, not forced; when none of them
        answers, the semantic ones are asked, so that the search degrades instead of failing. When they answer
        but find nothing, the semantic ones are asked too and their runs join the empty lexical ones, which is
        the case the fusion method (``adaptive``) fuses every run for.
        """
        every = {name: RETRIEVERS.get_named(name) for name in self.pipeline.retrievers}
        lexical = {name: retriever for name, retriever in every.items() if not retriever.needs_vector}
        retrieved = await self._run(context, lexical if lexical_only else every)
        semantic = {name: retriever for name, retriever in every.items() if retriever.needs_vector}
        if not (lexical_only and semantic_fallback and semantic) or any(retrieved.runs.values()):
            return retrieved
        rescue = await self._run(context, semantic)
        timings = {**retrieved.timings, **rescue.timings}
        if retrieved.runs and rescue.runs:
            # Nothing failed: the lexical retrievers answered, with nothing. What was done is explained, not warned
            # of, so that the answer is as complete (and as cacheable) as any hybrid one.
            note = "the lexical retrievers, asked alone for this query, found nothing, so kNN was asked as well"
            return replace(
                rescue,
                runs={**retrieved.runs, **rescue.runs},
                sources={**retrieved.sources, **rescue.sources},
                semantic={**retrieved.semantic, **rescue.semantic},
                warnings=(*retrieved.warnings, *rescue.warnings),
                timings=timings,
                partial=retrieved.partial or rescue.partial,
                explained=(*retrieved.explained, note),
            )
        if retrieved.runs:  # found nothing, and kNN could not answer: the empty answer stands, with kNN's reasons
            return replace(retrieved, warnings=(*retrieved.warnings, *rescue.warnings), timings=timings)
        if not rescue.runs:  # kNN could not answer either: the lexical failure stands, with kNN's reasons added
            warnings = (*retrieved.warnings, *rescue.warnings)
            timed_out = retrieved.timed_out and rescue.timed_out
            return replace(retrieved, warnings=warnings, timings=timings, timed_out=timed_out)
        note = "the fusion method asks only the lexical retrievers for this query, none answered: kNN answered instead"
        return replace(rescue, warnings=(*retrieved.warnings, note, *rescue.warnings), timings=timings)

    async def _run(self, context: RetrievalContext, chosen: Mapping[str, Retriever]) -> Retrieved:
        if self.pipeline.execution == "msearch":
            return await self.msearch(context, chosen)
        return await self.concurrent(context, chosen)

    async def concurrent(self, context: RetrievalContext, chosen: Mapping[str, Retriever]) -> Retrieved:
        """The query's embedding starts, lexical retrievers go out while it runs, semantic ones follow it.

        The embedding is handed to its thread before the lexical requests are even serialised: it is the
        longest step, and every microsecond it starts later is added to the search.
        """
        engine_side = context.fields.query_embedding == "engine"  # the engine embeds: every body can go now
        semantic = {name: r for name, r in chosen.items() if r.needs_vector and not engine_side}
        embedding = self.vectors.start(context.query) if semantic else None
        tasks: dict[str, asyncio.Task[_Answer]] = {}
        try:
            for name, retriever in chosen.items():
                if name not in semantic:
                    lexical = request_bodies(retriever, context, None)
                    tasks[name] = asyncio.create_task(self._search_all(name, lexical))
        except BaseException:  # a retriever (a plugin's, say) could not build its body: leave nothing running
            if embedding is not None:
                embedding.cancel()
            for task in tasks.values():
                task.cancel()
            raise
        answers: dict[str, _Answer] = {}
        query_vector = None
        try:
            if semantic:
                query_vector = await self.vectors.vector(context.query, embedding)
            if query_vector is not None and (vector := query_vector.vector) is not None:
                *queued, (last, last_bodies) = [
                    (name, request_bodies(r, context, vector)) for name, r in semantic.items()
                ]
                for name, requests in queued:
                    tasks[name] = asyncio.create_task(self._search_all(name, requests))
                # The last one runs in this coroutine: a task would cost a turn of the loop to start and
                # another to report back, both on the critical path of the search.
                answers[last] = await self._search_all(last, last_bodies)
            for name, task in tasks.items():
                answers[name] = await task  # the lexical ones are usually done by now: no turn of the loop
        except BaseException:
            # One retriever raised (a missing index) or the search was cancelled: the others are stopped and
            # awaited, so none is left running or dies with an exception nobody retrieves.
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            raise
        ordered = {name: answers[name] for name in chosen if name in answers}
        return _collected(context, chosen, ordered, query_vector)

    async def msearch(self, context: RetrievalContext, chosen: Mapping[str, Retriever]) -> Retrieved:
        """Embed first, then every retriever in one ``_msearch`` round trip.

        Each search carries its retriever's timeout for the engine (which then answers with what it
        found in time); the whole request has a client-side deadline. If the round trip fails anyway,
        the retrievers are sent again as separate requests, each with its own client-side timeout.
        """
        engine_side = context.fields.query_embedding == "engine"
        needs_vector = not engine_side and any(retriever.needs_vector for retriever in chosen.values())
        query_vector = await self.vectors.vector(context.query) if needs_vector else None
        vector = query_vector.vector if query_vector is not None else None
        searches = [
            (name, with_timeout(body, self._timeout_s(name)))
            for name, retriever in chosen.items()
            if vector is not None or engine_side or not retriever.needs_vector
            for body in request_bodies(retriever, context, vector)
        ]
        deadline = capped(max(self.pipeline.timeout_s(name) for name, _ in searches) + _MSEARCH_MARGIN_S, self.ends)
        started = time.perf_counter()
        try:
            async with within(deadline):
                results = await self.engine.msearch(self.index, [body for _, body in searches])
        except (asyncio.TimeoutError, errors.EngineError) as exc:
            if isinstance(exc, _UNANSWERABLE):
                raise
            reason = f"no answer within {deadline:g}s" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            retried = await self.concurrent(context, chosen)
            return _noted(retried, f"msearch failed ({reason}); retried as separate requests", elapsed_ms(started))
        took = elapsed_ms(started)
        parts: dict[str, list[_Answer]] = {}
        for (name, _), result in zip(searches, results, strict=True):
            if isinstance(result, Exception):
                if isinstance(result, _UNANSWERABLE):
                    raise result
                error = result if isinstance(result, errors.EngineError) else None
                timed_out = isinstance(error, errors.EngineTimeout)
                answer = _Answer(None, f"{name} failed: {result}", took, error=error, timed_out=timed_out)
            else:
                answer = _answered(name, result, took)
            parts.setdefault(name, []).append(answer)
        answers = {name: _merged(answered) for name, answered in parts.items()}
        collected = _collected(context, chosen, answers, query_vector, timed=False)
        return _noted(collected, None, took)

    async def native(
        self, context: RetrievalContext, plan: native.NativePlan, *, explain: bool
    ) -> Retrieved | NativeFailure:
        """One request in which the engine runs and fuses both retrievers, or the engine's error or why it failed.

        Without a query vector nothing is sent: the result is not ``native`` and carries the warnings
        saying why, and the search goes on lexical-only.
        """
        query_vector = await self.vectors.vector(context.query)
        if query_vector.vector is None:
            return Retrieved(warnings=query_vector.warnings, timings=dict(query_vector.timings))
        lexical = RETRIEVERS.get_named("bm25").body(context, None)
        semantic = RETRIEVERS.get_named("knn").body(context, query_vector.vector)
        size = context.top_k
        timeout_s = max(self._timeout_s("bm25"), self._timeout_s("knn"))
        fused = plan.body(lexical, semantic, size=size, source_fields=context.source_fields, explain=explain)
        body = with_timeout(fused, timeout_s)
        started = time.perf_counter()
        try:
            async with within(timeout_s):
                result = await self.engine.search(self.index, body)
        except (asyncio.TimeoutError, errors.EngineError) as exc:
            if isinstance(exc, _UNANSWERABLE):
                raise
            failure = f"no answer within {timeout_s:g}s" if isinstance(exc, asyncio.TimeoutError) else exc
            return NativeFailure(failure, elapsed_ms(started))
        sources: dict[str, Mapping[str, Any]] = {}
        for hit in result.hits:
            sources.setdefault(hit.id, canonical_source(hit.source, context.fields, hit.id))
        shards = f"native hybrid: {result.partial}" if result.partial else None
        return Retrieved(
            runs={"native": {hit.id: hit.score for hit in result.hits[:size]}},
            sources=sources,
            warnings=(*query_vector.warnings, *([shards] if shards else [])),
            timings={**query_vector.timings, "native": elapsed_ms(started)},
            concept_terms=query_vector.concept_terms,
            native=True,
            explanations=native.explanations(result.raw) if explain else {},
            partial=shards is not None,
        )

    async def _search_all(self, name: str, requests: Sequence[Mapping[str, Any]]) -> _Answer:
        """One retriever's requests, together; several (kNN per entity type) answer as one run."""
        if len(requests) == 1:
            return await self._timed_search(name, requests[0])
        return _merged(await asyncio.gather(*(self._timed_search(name, body) for body in requests)))

    async def _timed_search(self, name: str, body: Mapping[str, Any]) -> _Answer:
        timeout_s = self._timeout_s(name)
        started = time.perf_counter()
        try:
            async with within(timeout_s):
                result = await self.engine.search(self.index, with_timeout(body, timeout_s))
            return _answered(name, result, elapsed_ms(started))
        except asyncio.TimeoutError:
            return _Answer(None, f"{name} did not answer within {timeout_s:g}s", elapsed_ms(started), timed_out=True)
        except errors.EngineError as exc:
            if isinstance(exc, _UNANSWERABLE):
                raise
            timed_out = isinstance(exc, errors.EngineTimeout)
            return _Answer(None, f"{name} failed: {exc}", elapsed_ms(started), error=exc, timed_out=timed_out)


def _merged(answers: Sequence[_Answer]) -> _Answer:
    """The answers of one retriever's several requests as one: every hit once, at its best score, best first;
    the warnings of those that failed. With none answering, no result."""
    if len(answers) == 1:
        return answers[0]
    results = [answer.result for answer in answers if answer.result is not None]
    warnings = list(dict.fromkeys(answer.warning for answer in answers if answer.warning))
    ms = max(answer.ms for answer in answers)
    if not results:
        timed_out = all(answer.timed_out for answer in answers)
        return _Answer(None, "; ".join(warnings), ms, error=_refusal(answers), timed_out=timed_out)
    best: dict[str, Hit] = {}
    for result in results:
        for hit in result.hits:
            if hit.id not in best or hit.score > best[hit.id].score:
                best[hit.id] = hit
    hits = sorted(best.values(), key=lambda hit: (-hit.score, hit.id))
    total = sum(result.total for result in results)
    took = max(result.took_ms for result in results)
    partial = any(answer.partial for answer in answers)
    return _Answer(SearchResult(hits, total, took), "; ".join(warnings) or None, ms, merged=True, partial=partial)


def _collected(
    context: RetrievalContext,
    chosen: Mapping[str, Retriever],
    answers: Mapping[str, _Answer],
    query_vector: QueryVector | None,
    *,
    timed: bool = True,
) -> Retrieved:
    """The answers as runs, sources and warnings (the vector's first, then each retriever's, in order)."""
    runs: dict[str, dict[str, float]] = {}
    sources: dict[str, Mapping[str, Any]] = {}
    semantic: dict[str, bool] = {}
    for name, answer in answers.items():
        if answer.result is None:
            continue
        kept = answer.result.hits if answer.merged else answer.result.hits[: context.top_k]
        runs[name] = {hit.id: hit.score for hit in kept}
        semantic[name] = chosen[name].needs_vector
        for hit in answer.result.hits:
            sources.setdefault(hit.id, canonical_source(hit.source, context.fields, hit.id))
    warnings = tuple(answer.warning for answer in answers.values() if answer.warning)
    timings = {name: answer.ms for name, answer in answers.items()} if timed else {}
    if query_vector is not None:
        warnings = (*query_vector.warnings, *warnings)
        timings = {**query_vector.timings, **timings}
    terms = query_vector.concept_terms if query_vector is not None else ()
    partial = any(answer.partial for answer in answers.values())
    rejected = _refusal(list(answers.values()))
    timed_out = bool(answers) and all(answer.timed_out for answer in answers.values())
    return Retrieved(
        runs, sources, semantic, warnings, timings, terms, partial=partial, rejected=rejected, timed_out=timed_out
    )


def _refusal(answers: Sequence[_Answer]) -> errors.RequestRejected | None:
    """The engine's first refusal when it refused every one of ``answers`` (none answered otherwise)."""
    failures = [answer.error for answer in answers]
    if not failures or not all(isinstance(failure, errors.RequestRejected) for failure in failures):
        return None
    first = failures[0]
    return first if isinstance(first, errors.RequestRejected) else None


def _noted(retrieved: Retrieved, warning: str | None, msearch_ms: float) -> Retrieved:
    """``retrieved`` with the msearch round trip's time, and a warning about it first."""
    warnings = (warning, *retrieved.warnings) if warning else retrieved.warnings
    return replace(retrieved, warnings=warnings, timings={**retrieved.timings, "msearch": msearch_ms})
