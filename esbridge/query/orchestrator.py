"""One hybrid search, stage by stage: route, plan, retrieve, fuse, recency, links, re-rank, shape, explain.

The query's embedding starts first; the lexical requests go out while it runs and kNN follows the
vector (``esbridge.query.retrieval``). A part that fails degrades the answer instead of failing it: no
vector or no kNN answer gives ``lexical-only``, no BM25 answer gives ``semantic-only``; only when both
fail is the search an error. Every stage after retrieval is a pure function from ``esbridge.query``;
``search`` reads as the list of stages, in order.

With ``pipeline.mode`` ``auto`` or ``native``, the engine fuses when its probed capabilities allow the
configured method (``esbridge.query.native``): one request carries both retrievers' queries and comes
back fused (``native-hybrid``); recency, links and shaping then run here on that list. If the native
request fails, the search falls back to the client-side path and says so in ``warnings``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial

from cachetools import TTLCache

from esbridge import errors
from esbridge.attach.engine_embedding import engine_embedding_problem
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.base import Embedder
from esbridge.engines.base import AsyncEngine
from esbridge.engines.capabilities import Capabilities
from esbridge.ids import document_of
from esbridge.query.deadline import capped, within
from esbridge.query.documents import per_document
from esbridge.query.explain import Trail, build_hit, str_or_none
from esbridge.query.field_roles import features_off, searched_fields
from esbridge.query.fusion import FusionContext, fuse, get_fusion
from esbridge.query.graph import GraphOptions, with_neighbors
from esbridge.query.graph_reader import LinkReader
from esbridge.query.grouping import Grouping, grouped
from esbridge.query.model_check import ModelGuard
from esbridge.query.models import NativeDetails, SearchDetails, SearchRequest, SearchResponse
from esbridge.query.native.choice import NativeChoice, Refusals, choose_native, zero_weighted
from esbridge.query.notes import Notes
from esbridge.query.outcome import added, decided_choice, deeper, explained, lost, search_mode
from esbridge.query.planning import Plan, plan_search, query_cut, search_time_s, weights_for_runs
from esbridge.query.preflight import EngineCapabilities, Probe, checked_model
from esbridge.query.query_vectors import QueryVectors
from esbridge.query.recency import recency_boost
from esbridge.query.rerank import Reranker, rerank, rerank_text
from esbridge.query.rerank_budget import OverBudget, RerankThreads
from esbridge.query.retrieval import Retrieval, Retrieved
from esbridge.query.routing import Categories, routed_request
from esbridge.query.shaping import ShapeOptions, shaped
from esbridge.query.timing import elapsed_ms
from esbridge.query.types import FusionResult, Runs

Clock = Callable[[], datetime]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class HybridSearcher:
    """Answers ``SearchRequest``s against one index of one engine."""

    def __init__(
        self,
        engine: AsyncEngine,
        index: str,
        embedder: Embedder | None,
        pipeline: PipelineSettings | None = None,
        *,
        num_candidates: int = 100,
        clock: Clock = _utc_now,
        reranker: Reranker | None = None,
        probe: Probe | None = None,
        model_problem: str | None = None,
        routing: Categories | None = None,
        fields: FieldMap = DEFAULT_FIELD_MAP,
        model_guard: ModelGuard | None = None,
    ) -> None:
        self.engine = engine
        self.model_guard = model_guard
        """refuses, before any engine query, a search whose query model is not the index's"""
        self.fields = fields
        """the index's fields by role; features whose field it does not name are off"""
        self.index = index
        self.embedder = embedder
        self.pipeline = pipeline or PipelineSettings()
        self.num_candidates = num_candidates
        self.clock = clock
        self.reranker = reranker
        self._rerank_threads = RerankThreads()
        self.model_problem = model_problem
        """why the configured model did not load; every answer carries it as a warning"""
        self.routing: Categories = routing or {}
        """category -> keywords ([routing])"""
        self._capabilities = EngineCapabilities(probe)
        self._refusals = Refusals()
        self.vectors = QueryVectors(embedder, self.pipeline, engine, index)
        self.retrieval = Retrieval(engine, index, self.pipeline, self.vectors)
        self.links = LinkReader(engine, index, fields)
        cache = self.pipeline.cache
        self._responses: TTLCache[str, SearchResponse] | None = (
            TTLCache(cache.results, cache.results_ttl_s) if cache.results else None
        )

    def forget_responses(self) -> None:
        """Drop every cached answer (the index changed: a write the caller made or knows of)."""
        if self._responses is not None:
            self._responses.clear()

    async def capabilities(self, ends: float = math.inf) -> Capabilities | str:
        """The engine's capabilities, probed once (by the deadline ``ends``, a search's); or why they are unknown."""
        return await self._capabilities.by(ends)

    async def search(self, request: SearchRequest, *, time_s: float | None = None) -> SearchResponse:
        """``time_s``: the most time the caller has for the search (the sidecar: what is left of its request's);
        every stage gives up by then, or by the search's own time (``planning.search_time_s``) if sooner, and so
        do the model check and the capability probe before them (``preflight``)."""
        started = time.perf_counter()
        ends = started + search_time_s(self.pipeline, self.reranker is not None, time_s)
        key = self._checked_key(request)
        mismatch = await checked_model(self.model_guard, ends, url=self.engine.url)
        if (cached := self._cached(key, started)) is not None:
            return cached
        request, routed = routed_request(request, self.routing)
        plan = plan_search(
            request,
            self.pipeline,
            dialect=self.engine.dialect,
            num_candidates=self.num_candidates,
            fields=self.fields,
            reranks=self.reranker is not None,
        )
        off = features_off(self.fields, request)
        plan, engine_embedding = await self._engine_embedding(plan, ends)
        native = await self._native_choice(request, plan, ends)
        retrieved, plan, native, notes, rounds = await self._deep_enough(request, plan, native, ends)
        notes = notes.add(engine_embedding, query_cut(request, self.pipeline, self.fields))
        mode = search_mode(retrieved, notes.warnings, url=self.engine.url, index=self.index)
        doc_of = {item: document_of(item, source) for item, source in retrieved.sources.items()}
        runs = self._runs(retrieved, doc_of)
        fused, unweighted = self._fuse(request, plan, runs, retrieved)
        scores, multipliers, unread_dates = recency_boost(
            fused.scores, retrieved.sources, self.pipeline.recency, self.fields, self.clock, asked=request.recency
        )
        notes = notes.add(unweighted, unread_dates)
        trail = Trail(
            runs,
            retrieved.sources,
            fused,
            multipliers,
            explanations=retrieved.explanations,
            fields=searched_fields(self.fields),
        )
        scores, trail, doc_of, notes = await self._graph(request, scores, trail, doc_of, notes, ends)
        scores, trail, notes = await self._rerank(request, scores, trail, notes, ends)
        final, trail = self._shape(request, scores, trail, doc_of)
        grouping = Grouping()
        if request.group:
            left = ends - time.perf_counter()
            grouping = await grouped(
                self.engine,
                self.index,
                scores,
                trail.sources,
                request.top_n,
                fields=self.fields,
                returned=final,
                floor=self.pipeline.shaping.floor,
                timeout_s=left,
            )
        notes = notes.add(*grouping.warnings, timings=grouping.timings)
        response = SearchResponse(
            query=request.query,
            search_mode=mode,
            took_ms=elapsed_ms(started),
            warnings=[*(problem for problem in (self.model_problem, mismatch) if problem), *off.asked, *notes.warnings],
            partial=retrieved.partial,
            results=[build_hit(item, score, trail, explain=request.explain) for item, score in final.items()],
            groups=grouping.groups,
            details=SearchDetails(
                fusion=plan.method_name,
                top_k=plan.top_k,
                timings_ms=dict(notes.timings),
                rounds=rounds,
                fusion_decision=explained(fused.describe(), retrieved.explained),
                native=native.details,
                concept_terms=list(retrieved.concept_terms),
                routing=routed,
                off=off.features,
            ),
        )
        # A degraded answer is not kept: the next identical search should get the whole pipeline again.
        if self._responses is not None and not response.warnings:
            self._responses[key] = response.model_copy(deep=True)
        return response

    def _checked_key(self, request: SearchRequest) -> str:
        """The response-cache key of a request whose top_n the pipeline allows."""
        if request.top_n > self.pipeline.top_n_max:
            raise errors.ConfigError(
                f"top_n must be between 1 and pipeline.top_n_max ({self.pipeline.top_n_max}), got {request.top_n}"
            )
        return f"{self.index}\n{request.model_dump_json()}" if self._responses is not None else ""

    def _cached(self, key: str, started: float) -> SearchResponse | None:
        if self._responses is None or (cached := self._responses.get(key)) is None:
            return None
        fresh = cached.model_copy(deep=True)
        fresh.took_ms = elapsed_ms(started)
        fresh.details.cached = True
        return fresh

    async def _engine_embedding(self, plan: Plan, ends: float) -> tuple[Plan, str | None]:
        """With ``query_embedding = "engine"``: the plan, lexical-only with the reason when the probed engine
        cannot embed queries (an engine not probed is tried: a failed kNN request degrades with a warning)."""
        if self.fields.query_embedding != "engine" or plan.lexical_only:
            return plan, None
        capabilities = await self.capabilities(ends)
        problem = (
            engine_embedding_problem(capabilities, self.fields) if isinstance(capabilities, Capabilities) else None
        )
        if problem is None:
            return plan, None
        return replace(plan, lexical_only=True), f"kNN is off: {problem}"

    async def _native_choice(self, request: SearchRequest, plan: Plan, ends: float) -> NativeChoice:
        mode = request.mode or self.pipeline.mode
        if plan.lexical_only or mode == "client":
            return NativeChoice()
        if self.fields.query_embedding == "engine":
            reason = "the engine embeds the query (query_embedding = 'engine'); native plans send esbridge's vector"
            return NativeChoice(None, NativeDetails(used=False, reason=reason))
        method, known = plan.method_name, partial(self.capabilities, ends)
        choice = await choose_native(mode, self.pipeline, method, plan.weights, plan.params, capabilities=known)
        return self._refusals.screen(choice, mode=mode, explain=request.explain)

    async def _retrieve(
        self, retrieval: Retrieval, request: SearchRequest, plan: Plan, native: NativeChoice
    ) -> tuple[Retrieved, NativeChoice, Notes]:
        """Native hybrid when it is planned and answers; the client-side retrievers otherwise."""
        lexical_only = plan.lexical_only
        refused: errors.RequestRejected | None = None
        tried = Notes()
        if native.plan is not None:
            answer = await retrieval.native(plan.context, native.plan, explain=request.explain)
            tied = zero_weighted(native.plan, answer.runs.get("native", {})) if isinstance(answer, Retrieved) else None
            used = isinstance(answer, Retrieved) and answer.native and tied is None
            native = native.outcome(used=used, explain=request.explain)
            if used and isinstance(answer, Retrieved):
                return answer, native, Notes(native.notes).add(*answer.warnings, timings=answer.timings)
            if not isinstance(answer, Retrieved):
                warning = f"native hybrid failed ({answer}); fused by esbridge instead"
                native = native.failed(f"native hybrid failed: {answer}", warning)
                if isinstance(answer.error, errors.UnsupportedFeature):  # a licence refusal: the next would be too
                    self._capabilities.unknown(f"the engine refused native hybrid: {answer}")
                refused = answer.error if isinstance(answer.error, errors.RequestRejected) else None
                tried = Notes(timings={"native": answer.ms})
            elif tied is not None:  # the client-side fusion ranks by the retriever weighted 0, and says so
                native, tried = native.failed(tied), Notes(timings=answer.timings)
            else:  # no query vector: lexical-only, as on the client-side path
                lexical_only, tried = True, Notes(answer.warnings, answer.timings)
        retrieved = await retrieval.client_side(
            plan.context, lexical_only=lexical_only, semantic_fallback=plan.semantic_skipped
        )
        if refused is not None and native.plan is not None and {"bm25", "knn"} <= retrieved.runs.keys():
            # Its sub-queries answered on their own: the engine lacks what the native form needs.
            self._refusals.remember(native.plan, explain=request.explain, reason=str(refused))
        timings = {**tried.timings, **retrieved.timings}
        return retrieved, native, Notes(native.notes).add(*tried.warnings, *retrieved.warnings, timings=timings)

    async def _deep_enough(
        self, request: SearchRequest, plan: Plan, choice: NativeChoice, search_ends: float
    ) -> tuple[Retrieved, Plan, NativeChoice, Notes, int]:
        """Retrieval with ``top_n`` documents when there are that many (``outcome.deeper``), and how many rounds
        it took. The deeper rounds share one retriever timeout; one that fails, or runs out of it, leaves the
        answer before it. They keep the first round's native decision and query vector (``decided``,
        ``SearchVectors``); the notes' timings add up every round's."""
        collapse = request.collapse if request.collapse is not None else self.pipeline.shaping.collapse
        retrieval, vectors = self.retrieval.for_search(search_ends)
        answer = await self._retrieve(retrieval, request, plan, choice)
        decided, rounds, timings = decided_choice(answer[0], answer[1]), 1, answer[2].timings
        budget = capped(max(self.pipeline.timeout_s(name) for name in self.pipeline.retrievers), search_ends)
        ends = time.perf_counter() + budget
        while (top_k := deeper(answer[0], top_k=plan.top_k, top_n=request.top_n, collapse=collapse)) is not None:
            deep = replace(plan, top_k=top_k, context=replace(plan.context, top_k=top_k))
            rounds += 1
            try:
                async with within(max(ends - time.perf_counter(), 0.0)):
                    again = await self._retrieve(retrieval, request, deep, decided)
            except asyncio.TimeoutError:
                problem: str | None = f"no answer within {budget:g}s"
            else:
                problem, timings = lost(answer[0], again[0]), added(timings, again[2].timings)
            if problem is not None:
                note = f"asked again for {top_k} chunks to find top_n documents, the retrievers failed ({problem})"
                answer = (answer[0], answer[1], answer[2].add(f"{note}; fewer documents are answered"))
                break
            answer, plan = again, deep
        notes = Notes(answer[2].warnings, added(timings, vectors.timings))
        return answer[0], plan, answer[1], notes, rounds

    def _runs(self, retrieved: Retrieved, doc_of: Mapping[str, str]) -> Runs:
        """The retrievers' runs as fusion sees them: per chunk, or per document (``pipeline.fusion_level``)."""
        if self.pipeline.fusion_level == "document" and not retrieved.native:
            return per_document(retrieved.runs, doc_of)
        return retrieved.runs

    def _fuse(
        self, request: SearchRequest, plan: Plan, runs: Runs, retrieved: Retrieved
    ) -> tuple[FusionResult, str | None]:
        if retrieved.native:
            return FusionResult(dict(runs["native"])), None
        context = FusionContext(
            query=request.query,
            request=request,
            sources=retrieved.sources,
            vectors_from=self.embedder.name if self.embedder is not None else None,
        )
        used, warning = weights_for_runs(plan.weights, runs)
        return fuse(get_fusion(plan.method_name), runs, weights=used, context=context, params=plan.params), warning

    async def _graph(
        self,
        request: SearchRequest,
        scores: dict[str, float],
        trail: Trail,
        doc_of: dict[str, str],
        notes: Notes,
        ends: float,
    ) -> tuple[dict[str, float], Trail, dict[str, str], Notes]:
        """Links: neighbours of the strongest results join them (``expand``), or the results are re-scored
        by their links to each other (``rescore``); their reads have until ``ends``, the search's time."""
        wanted = request.graph if request.graph is not None else self.pipeline.graph.enabled
        if not wanted or not scores or self.fields.links is None:  # no links mapped: off, and details.off says so
            return scores, trail, doc_of, notes
        options = GraphOptions(**self.pipeline.graph.model_dump(exclude={"enabled"}))
        if options.mode == "lift" and request.top_n <= options.keep_top:  # it cannot change what is returned
            return scores, trail, doc_of, notes
        if options.mode in ("rescore", "lift"):
            relinked = await self.links.rescore(scores, doc_of, options, timeout_s=ends - time.perf_counter())
            notes = notes.add(*relinked.warnings, timings={"graph": relinked.ms} if relinked.ms is not None else {})
            if relinked.rescored is None:
                return scores, trail, doc_of, notes
            return relinked.rescored.scores, replace(trail, rescored=relinked.rescored), doc_of, notes
        left = ends - time.perf_counter()
        expanded = await self.links.expand(scores, doc_of, request.filters, options, timeout_s=left)
        notes = notes.add(*expanded.warnings, timings={"graph": expanded.ms} if expanded.ms is not None else {})
        sources = {**expanded.linked_sources, **trail.sources, **expanded.sources}
        trail = replace(trail, sources=sources, expansion=expanded.expansion)
        return with_neighbors(scores, expanded.expansion), trail, {**doc_of, **expanded.expansion.doc_of}, notes

    async def _rerank(
        self, request: SearchRequest, scores: dict[str, float], trail: Trail, notes: Notes, ends: float
    ) -> tuple[dict[str, float], Trail, Notes]:
        if request.rerank and self.reranker is None:
            notes = notes.add("re-ranking was asked for, but no re-ranker is configured (pipeline.rerank)")
        if self.reranker is None or request.rerank is False:
            return scores, trail, notes
        started = time.perf_counter()
        texts = {item: rerank_text(trail.sources.get(item, {})) for item in scores}
        settings = self.pipeline.rerank
        reranker = self.reranker
        budget_s = capped(settings.timeout_s, ends)
        if budget_s <= 0:
            skipped = "re-ranking was not applied, the fused order is kept: none of the search's time was left"
            return scores, trail, notes.add(skipped)
        of = "pipeline.rerank.timeout_s" if budget_s == settings.timeout_s else "what was left of the search's time"
        try:
            reranked = await self._rerank_threads.run(
                lambda: rerank(scores, texts, request.query, reranker, settings.top, weight=settings.weight),
                budget_s,
                of=of,
            )
        except errors.EmbeddingError as exc:  # the model failed on these texts: the answer stands without it
            return scores, trail, notes.add(f"re-ranking failed, the fused order is kept: {exc}")
        except OverBudget as exc:
            return scores, trail, notes.add(f"re-ranking was not applied, the fused order is kept: {exc}")
        trail = replace(trail, rerank_scores=reranked.rerank_scores, rerank_terms=reranked.terms)
        return reranked.scores, trail, notes.add(timings={"rerank": elapsed_ms(started)})

    def _shape(
        self, request: SearchRequest, scores: Mapping[str, float], trail: Trail, doc_of: Mapping[str, str]
    ) -> tuple[dict[str, float], Trail]:
        shaping = self.pipeline.shaping
        collapse = request.collapse if request.collapse is not None else shaping.collapse
        settings = shaping.model_dump(include={"floor", "cap_types", "type_share"})
        options = ShapeOptions(top_n=request.top_n, collapse=collapse, **settings)
        types = {item: str_or_none(source.get("entity_type")) for item, source in trail.sources.items()}
        result = shaped(scores, options, doc_of=doc_of, entity_type_of=types)
        return result.scores, replace(trail, unnormalized=scores, scale=result.scale)
