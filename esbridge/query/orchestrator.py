"""Running one hybrid search: retrieve in parallel, fuse, boost recent, expand links, shape, explain.

The BM25 request is sent before the query is embedded, so the embedding overlaps the lexical round
trip; kNN follows as soon as the vector exists. Each retriever has its own timeout. A part that fails
degrades the answer instead of failing it: no vector or no kNN answer gives ``lexical-only``, no BM25
answer gives ``semantic-only``; only when both fail is the search an error. Every stage after
retrieval is a pure function from ``esbridge.query``.

With ``pipeline.mode`` ``auto`` or ``native``, the engine fuses when its probed capabilities allow the
configured method (``esbridge.pipelines``): one request carries both retrievers' queries and comes
back fused (``native-hybrid``); recency, graph expansion and shaping then run here on that list. If
the native request fails, the search falls back to the client-side path and says so in ``warnings``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from cachetools import TTLCache

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.embeddings.base import Embedder, start_embedding
from esbridge.engines.base import AsyncEngine, SearchResult
from esbridge.engines.capabilities import Capabilities
from esbridge.pipelines import native
from esbridge.pipelines.fusion import native_fusion
from esbridge.query import bodies
from esbridge.query.concepts import expand_query
from esbridge.query.deadline import within
from esbridge.query.documents import per_document
from esbridge.query.fusion import AdaptiveResult, QppResult, QueryKind, classify_query, get_fusion
from esbridge.query.graph import (
    GraphExpansion,
    GraphOptions,
    expand,
    first_chunk,
    frontier,
    seed_docs,
    with_neighbors,
)
from esbridge.query.link_graph import LINK_FIELDS, link_map
from esbridge.query.link_rescore import Rescored, rescore
from esbridge.query.models import Explain, RetrieverExplain, SearchHit, SearchMode, SearchRequest, SearchResponse
from esbridge.query.recency import HalfLife, RecencyRule, Tier, Tiers, apply_recency, parse_modified_at
from esbridge.query.rerank import Reranker, rerank
from esbridge.query.retrievers import RETRIEVERS, RetrievalContext, Retriever
from esbridge.query.shaping import ShapeOptions, shape
from esbridge.query.types import FusionResult

Clock = Callable[[], datetime]
Probe = Callable[[], Awaitable[Capabilities]]

# How much longer than the slowest retriever's own timeout a whole _msearch may take.
_MSEARCH_MARGIN_S = 1.0


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class _Embedding:
    """A query embedding under way in a worker thread."""

    text: str
    vectors: asyncio.Future[list[list[float]]]
    started: float


LINKED_CHUNKS = 500
"""How many chunks one graph-expansion request reads (the seeds' and those linking to them)."""


@dataclass
class _Retrieved:
    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    sources: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    concept_terms: list[str] = field(default_factory=list)
    semantic: dict[str, bool] = field(default_factory=dict)
    """retriever name -> whether it is a semantic (vector) retriever"""
    native: bool = False
    """the engine fused the retrievers itself; ``runs`` then holds its one fused list as ``native``"""
    explanations: dict[str, Any] = field(default_factory=dict)
    """id -> the engine's own score explanation (native hybrid with explain)"""
    rescored: Rescored | None = None
    """graph mode ``rescore``: what the links lifted"""


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
    ) -> None:
        self.engine = engine
        self._probe = probe
        self._capabilities: Capabilities | str | None = None
        self.reranker = reranker
        self.index = index
        self.embedder = embedder
        self.pipeline = pipeline or PipelineSettings()
        self.num_candidates = num_candidates
        self.clock = clock
        cache = self.pipeline.cache
        self._vectors: TTLCache[str, list[float]] | None = (
            TTLCache(cache.embeddings, cache.embeddings_ttl_s) if cache.embeddings else None
        )
        self._responses: TTLCache[str, SearchResponse] | None = (
            TTLCache(cache.results, cache.results_ttl_s) if cache.results else None
        )

    def forget_responses(self) -> None:
        """Drop every cached answer (the index changed: a write the caller made or knows of)."""
        if self._responses is not None:
            self._responses.clear()

    async def search(self, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        if request.top_n > self.pipeline.top_n_max:
            raise errors.ConfigError(
                f"top_n must be between 1 and pipeline.top_n_max ({self.pipeline.top_n_max}), got {request.top_n}"
            )
        key = f"{self.index}\n{request.model_dump_json()}" if self._responses is not None else ""
        if self._responses is not None and (cached := self._responses.get(key)) is not None:
            fresh = cached.model_copy(deep=True)
            fresh.took_ms = _ms(started)
            fresh.details["cached"] = True
            return fresh

        method_name = request.fusion or self.pipeline.fusion
        fusion = get_fusion(method_name)
        weights = self._weights(request)
        top_k = self.pipeline.top_k(request.top_n)
        params = dict(self.pipeline.fusion_params) if method_name == self.pipeline.fusion else {}
        details: dict[str, Any] = {"fusion": method_name, "top_k": top_k}
        retrieved = await self._retrieve_natively_or_not(request, top_k, method_name, weights, params, details)
        if "bm25" in self.pipeline.retrievers and bodies.bm25_text(request.query) != request.query:
            retrieved.warnings.append(
                "the query is too long for the engine's clause limit: BM25 searched at most its first "
                f"{bodies.BM25_MAX_WORDS} distinct words"
            )
        mode = "native-hybrid" if retrieved.native else _mode(retrieved.semantic)
        if mode is None:
            raise errors.EngineUnavailable(
                "; ".join(retrieved.warnings) or "no retriever answered",
                url=self.engine.url,
                operation="search",
                index=self.index,
            )
        doc_of = {item: str(source.get("doc_id", item.rsplit("#", 1)[0])) for item, source in retrieved.sources.items()}
        if retrieved.native:
            fused = FusionResult(dict(retrieved.runs["native"]))
        else:
            if self.pipeline.fusion_level == "document":
                retrieved.runs = per_document(retrieved.runs, doc_of)
            fused = self._fuse(fusion, method_name, retrieved.runs, weights, params, request.query, retrieved.sources)
        scores = fused.scores
        details["timings_ms"] = retrieved.timings
        if retrieved.concept_terms:
            details["concept_terms"] = retrieved.concept_terms
        if isinstance(fused, AdaptiveResult):
            details["fusion_decision"] = {
                "kind": fused.decision.kind.value,
                "identifiers": list(fused.decision.identifiers),
                "effective_weights": dict(fused.decision.effective_weights),
                "reason": fused.decision.reason,
            }
        elif isinstance(fused, QppResult):
            details["fusion_decision"] = self._qpp_decision(fused)

        multipliers: dict[str, float] = {}
        if request.recency if request.recency is not None else self.pipeline.recency.enabled:
            modified = {
                item: parse_modified_at(stamp)
                for item, source in retrieved.sources.items()
                if (stamp := source.get("modified_at"))
            }
            if modified:  # nothing to multiply when no result carries a date
                boosted = apply_recency(scores, modified, self.clock(), self._recency_rule())
                scores, multipliers = boosted.scores, boosted.multipliers

        expansion = GraphExpansion({}, {})
        if (request.graph if request.graph is not None else self.pipeline.graph.enabled) and scores:
            if self.pipeline.graph.mode == "rescore":
                scores = await self._rescore(scores, doc_of, request, retrieved)
            else:
                expansion = await self._expand(scores, doc_of, request, retrieved)
                scores = with_neighbors(scores, expansion)
                doc_of.update(expansion.doc_of)

        rerank_scores: dict[str, float] = {}
        if request.rerank and self.reranker is None:
            retrieved.warnings.append("re-ranking was asked for, but no re-ranker is configured (pipeline.rerank)")
        if self.reranker is not None and (request.rerank if request.rerank is not None else True):
            started_rerank = time.perf_counter()
            texts = {item: _rerank_text(retrieved.sources.get(item, {})) for item in scores}
            reranked = await asyncio.to_thread(
                rerank,
                scores,
                texts,
                request.query,
                self.reranker,
                self.pipeline.rerank.top,
                weight=self.pipeline.rerank.weight,
            )
            scores, rerank_scores = reranked.scores, reranked.rerank_scores
            retrieved.timings["rerank"] = _ms(started_rerank)

        shaping = self.pipeline.shaping
        options = ShapeOptions(
            top_n=request.top_n,
            collapse=request.collapse if request.collapse is not None else shaping.collapse,
            floor=shaping.floor,
            cap_types=shaping.cap_types,
            type_share=shaping.type_share,
        )
        types = {item: _str_or_none(source.get("entity_type")) for item, source in retrieved.sources.items()}
        final = shape(scores, options, doc_of=doc_of, entity_type_of=types)

        hits = [
            self._hit(item, score, retrieved, fused, multipliers, expansion, request.explain, rerank_scores)
            for item, score in final.items()
        ]
        response = SearchResponse(
            query=request.query,
            search_mode=mode,
            took_ms=_ms(started),
            warnings=retrieved.warnings,
            results=hits,
            details=details,
        )
        # A degraded answer is not kept: the next identical search should get the whole pipeline again.
        if self._responses is not None and not response.warnings:
            self._responses[key] = response.model_copy(deep=True)
        return response

    def _qpp_decision(self, fused: QppResult) -> dict[str, Any]:
        decision = fused.decision
        described: dict[str, Any] = {
            "knn_share": decision.share,
            "predictors": dict(decision.predictors),
            "predicted_ndcg@10": dict(decision.predicted),
            "effective_weights": dict(decision.effective_weights),
            "reason": decision.reason,
        }
        vectors_from = self.embedder.name if self.embedder is not None else None
        if decision.share is not None and decision.fitted_for and vectors_from and vectors_from != decision.fitted_for:
            # Its kNN predictors read score gaps whose scale depends on the model; the shares stay within
            # the model's candidates (0.4-0.6 for the shipped one), so a mismatch costs little, but it shows.
            described["caution"] = (
                f"the qpp model was fitted on kNN scores of {decision.fitted_for}, this search's vectors come "
                f"from {vectors_from}: its choice of share may be off; esbridge tune fits one for this index"
            )
        return described

    def _weights(self, request: SearchRequest) -> dict[str, float]:
        """The configured weights with the request's over them; a name that is no retriever of this pipeline
        (a typo would otherwise rank as if no weight had been given) or weights that are all 0 are errors."""
        asked = request.weights or {}
        unknown = sorted(set(asked) - set(self.pipeline.retrievers))
        if unknown:
            raise errors.ConfigError(
                f"weights name no retriever of this pipeline: {', '.join(unknown)}; "
                f"its retrievers: {', '.join(self.pipeline.retrievers)}"
            )
        weights = {**self.pipeline.weights, **asked}
        if not any(weights.get(name, 1.0) > 0 for name in self.pipeline.retrievers):
            raise errors.ConfigError("at least one retriever's weight must be above 0")
        return weights

    async def _retrieve_natively_or_not(
        self,
        request: SearchRequest,
        top_k: int,
        method_name: str,
        weights: Mapping[str, float],
        params: Mapping[str, Any],
        details: dict[str, Any],
    ) -> _Retrieved:
        """Native hybrid when it is planned and answers; the client-side retrievers otherwise."""
        lexical_only = method_name == "adaptive" and classify_query(request.query).kind == QueryKind.IDENTIFIER
        notes: list[str] = []
        plan = None
        if not lexical_only:
            plan = await self._native_plan(request, method_name, weights, params, details, notes)
        if plan is not None:
            answer = await self._retrieve_natively(request, top_k, plan)
            used = isinstance(answer, _Retrieved) and answer.native
            details["native"] = {**plan.describe(), "used": used}
            if isinstance(answer, str):
                notes.append(f"native hybrid failed ({answer}); fused by esbridge instead")
            elif answer.native:
                return answer
            else:  # no query vector: lexical-only, as on the client-side path
                notes.extend(answer.warnings)
                lexical_only = True
        retrieved = await self._retrieve(request, top_k, want_knn=not lexical_only)
        retrieved.warnings[:0] = notes
        return retrieved

    async def capabilities(self) -> Capabilities | str:
        """The engine's capabilities, probed once; or why they are unknown."""
        if self._capabilities is None:
            if self._probe is None:
                self._capabilities = "the engine's capabilities were not probed"
            else:
                try:
                    self._capabilities = await self._probe()
                except errors.EsbridgeError as exc:
                    return f"the engine could not be probed: {exc}"
        return self._capabilities

    async def _native_plan(
        self,
        request: SearchRequest,
        method_name: str,
        weights: Mapping[str, float],
        params: Mapping[str, Any],
        details: dict[str, Any],
        notes: list[str],
    ) -> native.NativePlan | None:
        """The native plan of this search, or None (with the reason in ``details``) for the client-side path.

        A fusion configuration the engines cannot express is an error in ``native`` mode and a reason to
        fuse client-side in ``auto`` mode; so is an engine that lacks the feature, with a warning in ``native``.
        """
        mode = request.mode or self.pipeline.mode
        if mode == "client":
            return None
        if self.pipeline.fusion_level == "document":
            reason = "document-level fusion (pipeline.fusion_level) runs in esbridge"
            details["native"] = {"used": False, "reason": reason}
            if mode == "native":
                notes.append(f"native hybrid is not available ({reason}); fused by esbridge instead")
            return None
        try:
            fusion = native_fusion(method_name, weights, params, self.pipeline.retrievers)
        except errors.ConfigError as exc:
            if mode == "native":
                raise
            details["native"] = {"used": False, "reason": str(exc)}
            return None
        capabilities = await self.capabilities()
        outcome = capabilities if isinstance(capabilities, str) else native.plan(capabilities, fusion)
        if isinstance(outcome, str):
            details["native"] = {"used": False, "reason": outcome}
            if mode == "native":
                notes.append(f"native hybrid is not available ({outcome}); fused by esbridge instead")
            return None
        return outcome

    async def _retrieve_natively(self, request: SearchRequest, top_k: int, plan: native.NativePlan) -> _Retrieved | str:
        """One request in which the engine runs and fuses both retrievers, or the reason it failed.

        Without a query vector nothing is sent: the result is not ``native`` and carries the warnings
        saying why, and the search goes on lexical-only.
        """
        retrieved = _Retrieved()
        vector = await self._semantic_vector(request.query, retrieved)
        if vector is None:
            return retrieved
        context = self._context(request, top_k)
        lexical = RETRIEVERS.get_named("bm25").body(context, None)
        semantic = RETRIEVERS.get_named("knn").body(context, vector)
        body = plan.body(lexical, semantic, size=top_k, source_fields=context.source_fields, explain=request.explain)
        timeout_s = max(self.pipeline.timeout_s("bm25"), self.pipeline.timeout_s("knn"))
        started = time.perf_counter()
        try:
            async with within(timeout_s):
                result = await self.engine.search(self.index, body)
        except (asyncio.TimeoutError, errors.EngineError) as exc:
            if isinstance(exc, errors.IndexNotFound):
                raise
            return f"no answer within {timeout_s:g}s" if isinstance(exc, asyncio.TimeoutError) else str(exc)
        finally:
            retrieved.timings["native"] = _ms(started)
        retrieved.native = True
        retrieved.runs["native"] = {hit.id: hit.score for hit in result.hits[:top_k]}
        for hit in result.hits:
            retrieved.sources.setdefault(hit.id, hit.source)
        if request.explain:
            retrieved.explanations = native.explanations(result.raw)
        return retrieved

    def _context(self, request: SearchRequest, top_k: int) -> RetrievalContext:
        reads_texts = (request.fusion or self.pipeline.fusion) == "adaptive" or (
            self.reranker is not None and request.rerank is not False
        )
        fields = bodies.RESULT_FIELDS if reads_texts else bodies.DISPLAY_FIELDS
        return RetrievalContext(
            self.engine.dialect, request.query, top_k, request.filters, self.num_candidates, source_fields=fields
        )

    async def _retrieve(self, request: SearchRequest, top_k: int, *, want_knn: bool) -> _Retrieved:
        retrieved = _Retrieved()
        context = self._context(request, top_k)
        chosen = {name: RETRIEVERS.get_named(name) for name in self.pipeline.retrievers}
        if not want_knn:
            chosen = {name: retriever for name, retriever in chosen.items() if not retriever.needs_vector}
        if self.pipeline.execution == "msearch":
            results = await self._retrieve_in_one_request(request, context, chosen, retrieved)
        else:
            results = await self._retrieve_concurrently(request, context, chosen, retrieved)
        for name, result in results.items():
            if result is None:
                continue
            retrieved.runs[name] = {hit.id: hit.score for hit in result.hits[:top_k]}
            retrieved.semantic[name] = chosen[name].needs_vector
            for hit in result.hits:
                retrieved.sources.setdefault(hit.id, hit.source)
        return retrieved

    async def _retrieve_concurrently(
        self,
        request: SearchRequest,
        context: RetrievalContext,
        chosen: Mapping[str, Retriever],
        retrieved: _Retrieved,
    ) -> dict[str, SearchResult | None]:
        """The query's embedding starts, lexical retrievers go out while it runs, semantic ones follow it.

        The embedding is handed to its thread before the lexical requests are even serialised: it is the
        longest step, and every microsecond it starts later is added to the search.
        """
        semantic = {name: retriever for name, retriever in chosen.items() if retriever.needs_vector}
        embedding = self._start_embedding(request.query) if semantic else None
        tasks: dict[str, asyncio.Task[SearchResult | None]] = {}
        try:
            for name, retriever in chosen.items():
                if not retriever.needs_vector:
                    body = retriever.body(context, None)
                    tasks[name] = asyncio.create_task(self._timed_search(name, body, retrieved))
        except BaseException:  # a retriever (a plugin's, say) could not build its body: leave nothing running
            if embedding is not None:
                embedding.vectors.cancel()
            for task in tasks.values():
                task.cancel()
            raise
        results: dict[str, SearchResult | None] = {}
        try:
            if semantic and (vector := await self._semantic_vector(request.query, retrieved, embedding)) is not None:
                semantic_bodies = [(name, retriever.body(context, vector)) for name, retriever in semantic.items()]
                *queued, (last, last_body) = semantic_bodies
                for name, body in queued:
                    tasks[name] = asyncio.create_task(self._timed_search(name, body, retrieved))
                # The last one runs in this coroutine: a task would cost a turn of the loop to start and
                # another to report back, both on the critical path of the search.
                results[last] = await self._timed_search(last, last_body, retrieved)
            for name, task in tasks.items():
                results[name] = await task  # the lexical ones are usually done by now: no turn of the loop
        except BaseException:
            # One retriever raised (a missing index) or the search was cancelled: the others are stopped and
            # awaited, so none is left running or dies with an exception nobody retrieves.
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            raise
        return {name: results[name] for name in chosen if name in results}

    async def _retrieve_in_one_request(
        self,
        request: SearchRequest,
        context: RetrievalContext,
        chosen: Mapping[str, Retriever],
        retrieved: _Retrieved,
    ) -> dict[str, SearchResult | None]:
        """Embed first, then every retriever in one ``_msearch`` round trip.

        Each search carries its retriever's timeout for the engine (which then answers with what it
        found in time); the whole request has a client-side deadline. If the round trip fails anyway,
        the retrievers are sent again as separate requests, each with its own client-side timeout.
        """
        needs_vector = any(retriever.needs_vector for retriever in chosen.values())
        vector = await self._semantic_vector(request.query, retrieved) if needs_vector else None
        searches = {
            name: {**retriever.body(context, vector), "timeout": f"{round(self.pipeline.timeout_s(name) * 1000)}ms"}
            for name, retriever in chosen.items()
            if vector is not None or not retriever.needs_vector
        }
        deadline = max(self.pipeline.timeout_s(name) for name in searches) + _MSEARCH_MARGIN_S
        started = time.perf_counter()
        try:
            async with within(deadline):
                answers = await self.engine.msearch(self.index, list(searches.values()))
        except (asyncio.TimeoutError, errors.EngineError) as exc:
            if isinstance(exc, errors.IndexNotFound):
                raise
            reason = f"no answer within {deadline:g}s" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            retrieved.warnings.append(f"msearch failed ({reason}); retried as separate requests")
            return await self._retrieve_concurrently(request, context, chosen, retrieved)
        finally:
            retrieved.timings["msearch"] = _ms(started)
        results: dict[str, SearchResult | None] = {}
        for name, answer in zip(searches, answers, strict=True):
            if isinstance(answer, Exception):
                if isinstance(answer, errors.IndexNotFound):
                    raise answer
                retrieved.warnings.append(f"{name} failed: {answer}")
                results[name] = None
                continue
            if answer.raw.get("timed_out"):
                retrieved.warnings.append(f"{name} timed out on the engine; its results may be partial")
            results[name] = answer
        return results

    async def _timed_search(self, name: str, body: Mapping[str, Any], retrieved: _Retrieved) -> SearchResult | None:
        timeout_s = self.pipeline.timeout_s(name)
        started = time.perf_counter()
        try:
            async with within(timeout_s):
                return await self.engine.search(self.index, body)
        except asyncio.TimeoutError:
            retrieved.warnings.append(f"{name} did not answer within {timeout_s:g}s")
        except errors.EngineError as exc:
            if isinstance(exc, errors.IndexNotFound):
                raise
            retrieved.warnings.append(f"{name} failed: {exc}")
        finally:
            retrieved.timings[name] = _ms(started)
        return None

    async def _semantic_vector(
        self, query: str, retrieved: _Retrieved, embedding: _Embedding | None = None
    ) -> list[float] | None:
        """The query's vector, or with concept expansion on, the vector of the query plus its nearest concepts.

        ``embedding``: the query's embedding if already started (``_start_embedding``).
        """
        vector = await self._embed(query, retrieved, embedding)
        if vector is None or not self.pipeline.concepts.enabled:
            return vector
        started = time.perf_counter()
        try:
            expansion = await expand_query(self.engine, self.index, query, vector, terms=self.pipeline.concepts.terms)
        except errors.EngineError as exc:
            retrieved.warnings.append(f"concept expansion skipped: {exc}")
            return vector
        finally:
            retrieved.timings["concepts"] = _ms(started)
        retrieved.concept_terms = list(expansion.terms)
        if not expansion.terms:
            return vector
        return await self._embed(expansion.text, retrieved) or vector

    def _start_embedding(self, text: str) -> _Embedding | None:
        """``text``'s embedding, running in a worker thread from now on; None with no model or a cached vector."""
        if self.embedder is None or (self._vectors is not None and text in self._vectors):
            return None
        return _embedding(self.embedder, text)

    async def _embed(self, text: str, retrieved: _Retrieved, embedding: _Embedding | None = None) -> list[float] | None:
        if self.embedder is None:
            retrieved.warnings.append("no embedding model: answered with BM25 only")
            return None
        if self._vectors is not None and (vector := self._vectors.get(text)) is not None:
            return vector
        if embedding is None or embedding.text != text:
            embedding = _embedding(self.embedder, text)
        started = embedding.started
        try:
            async with within(self.pipeline.embed_timeout_s):
                vectors = await embedding.vectors
        except asyncio.TimeoutError:
            retrieved.warnings.append(f"the query was not embedded within {self.pipeline.embed_timeout_s:g}s")
            return None
        except errors.EsbridgeError as exc:
            retrieved.warnings.append(f"the query could not be embedded: {exc}")
            return None
        finally:
            retrieved.timings["embed"] = _ms(started)
        if self._vectors is not None:
            self._vectors[text] = vectors[0]
        return vectors[0]

    def _fuse(
        self,
        fusion: Any,
        method_name: str,
        runs: Mapping[str, Mapping[str, float]],
        weights: Mapping[str, float],
        fusion_params: Mapping[str, Any],
        query: str,
        sources: Mapping[str, Mapping[str, Any]],
    ) -> FusionResult:
        used = {name: weight for name, weight in weights.items() if name in runs}
        params: dict[str, Any] = dict(fusion_params)
        if method_name == "adaptive":
            params["query"] = query
            params["texts"] = {
                item: " ".join(str(source.get(field) or "") for field in ("title", "body", "code", "path"))
                for item, source in sources.items()
            }
        result: FusionResult = fusion(runs, weights=used, **params)
        return result

    def _recency_rule(self) -> RecencyRule:
        settings = self.pipeline.recency
        if settings.mode == "half_life":
            return HalfLife(timedelta(days=settings.half_life_days), settings.boost)
        return Tiers(tuple(Tier(timedelta(days=days), multiplier) for days, multiplier in settings.tiers))

    async def _expand(
        self,
        scores: Mapping[str, float],
        doc_of: dict[str, str],
        request: SearchRequest,
        retrieved: _Retrieved,
    ) -> GraphExpansion:
        options = GraphOptions(**self.pipeline.graph.model_dump(exclude={"enabled"}))
        seeds = seed_docs(scores, doc_of, options)
        if not seeds:
            return GraphExpansion({}, {})
        started = time.perf_counter()
        links = await self._links(seeds, request, retrieved)
        if options.hops > 1 and (more := frontier(scores, doc_of, links, options)):
            links = {**links, **await self._links(more, request, retrieved)}
        expansion = await self._admitted(expand(scores, doc_of, links, options), request, retrieved)
        retrieved.timings["graph"] = _ms(started)
        return expansion

    async def _rescore(
        self, scores: Mapping[str, float], doc_of: Mapping[str, str], request: SearchRequest, retrieved: _Retrieved
    ) -> dict[str, float]:
        """The direct results re-scored by their links to each other; their own links are all it needs."""
        options = GraphOptions(**self.pipeline.graph.model_dump(exclude={"enabled"}))
        started = time.perf_counter()
        # Every chunk of a document carries its links, and every document has a chunk 0.
        firsts = sorted({first_chunk(doc_of[item]) for item in scores})
        body = {"size": len(firsts), "_source": list(LINK_FIELDS), "query": {"ids": {"values": firsts}}}
        try:
            result = await self.engine.search(self.index, body)
        except errors.EngineError as exc:
            retrieved.warnings.append(f"graph re-scoring skipped: {exc}")
            return dict(scores)
        retrieved.rescored = rescore(scores, doc_of, link_map(hit.source for hit in result.hits), options)
        retrieved.timings["graph"] = _ms(started)
        return retrieved.rescored.scores

    async def _admitted(
        self, expansion: GraphExpansion, request: SearchRequest, retrieved: _Retrieved
    ) -> GraphExpansion:
        """The neighbours that exist and pass the request's filters, with their stored fields.

        A link names a document, not a search hit: its target may be missing from the index (a dangling
        wikilink) or filtered out (deprecated, another tag), and must then not become a result.
        """
        if not expansion.scores:
            return expansion
        query = bodies.filter_query(request.filters)
        query["bool"]["filter"].append({"ids": {"values": list(expansion.scores)}})
        body = {"size": len(expansion.scores), "_source": list(bodies.RESULT_FIELDS), "query": query}
        try:
            result = await self.engine.search(self.index, body)
        except errors.EngineError as exc:
            retrieved.warnings.append(f"graph expansion skipped: {exc}")
            return GraphExpansion({}, {})
        for hit in result.hits:
            retrieved.sources[hit.id] = hit.source
        found = {hit.id for hit in result.hits}
        return GraphExpansion(
            {item: score for item, score in expansion.scores.items() if item in found},
            {item: neighbor for item, neighbor in expansion.neighbors.items() if item in found},
        )

    async def _links(
        self, doc_ids: Sequence[str], request: SearchRequest, retrieved: _Retrieved
    ) -> dict[str, dict[str, float]]:
        body = bodies.links_body(doc_ids, size=LINKED_CHUNKS, filters=request.filters)
        try:
            result = await self.engine.search(self.index, body)
        except errors.EngineError as exc:
            retrieved.warnings.append(f"graph expansion skipped: {exc}")
            return {}
        if result.total > len(result.hits):
            retrieved.warnings.append(
                f"graph expansion read {len(result.hits)} of the {result.total} chunks linked with its seeds; "
                "some neighbours may be missing"
            )
        for hit in result.hits:
            retrieved.sources.setdefault(hit.id, hit.source)
        return link_map(hit.source for hit in result.hits)

    def _hit(
        self,
        item: str,
        score: float,
        retrieved: _Retrieved,
        fused: FusionResult,
        multipliers: Mapping[str, float],
        expansion: GraphExpansion,
        explain: bool,
        rerank_scores: Mapping[str, float],
    ) -> SearchHit:
        source = retrieved.sources.get(item, {})
        neighbour = expansion.neighbors.get(item)
        rescored = retrieved.rescored
        doc_key = str(source.get("doc_id") or item.rsplit("#", 1)[0])
        linked = rescored.linked.get(doc_key, []) if rescored else []
        doc_id = str(source.get("doc_id") or (neighbour.doc_id if neighbour else item.rsplit("#", 1)[0]))
        detail: Explain | None = None
        if explain:
            detail = Explain(
                retrievers={
                    name: RetrieverExplain(rank=rank, score=run[item])
                    for name, run in retrieved.runs.items()
                    for rank, candidate in enumerate(run, start=1)
                    if candidate == item
                },
                contributions=dict(fused.contributions.get(item, {})),
                fused_score=fused.scores.get(item, 0.0),
                neighbour_of=sorted(neighbour.neighbor_of) if neighbour else linked,
                hops=neighbour.hops if neighbour else None,
                recency_multiplier=multipliers.get(item, 1.0),
                link_lift=rescored.lifts.get(doc_key) if rescored else None,
                rerank_score=rerank_scores.get(item),
                engine_explanation=retrieved.explanations.get(item),
                final_score=score,
            )
        return SearchHit(
            id=item,
            doc_id=doc_id,
            score=score,
            title=_str_or_none(source.get("title")),
            path=_str_or_none(source.get("path")),
            entity_type=_str_or_none(source.get("entity_type")),
            explain=detail,
        )


def _embedding(embedder: Embedder, text: str) -> _Embedding:
    started = time.perf_counter()
    return _Embedding(text, start_embedding(embedder, [text]), started)


def _rerank_text(source: Mapping[str, Any]) -> str:
    return "\n".join(str(source.get(field) or "") for field in ("title", "body") if source.get(field))


def _mode(answered: Mapping[str, bool]) -> SearchMode | None:
    """From which retrievers answered, by kind: both kinds is hybrid."""
    lexical, semantic = (not all(answered.values())), any(answered.values())
    if not answered:
        return None
    if lexical and semantic:
        return "hybrid"
    return "semantic-only" if semantic else "lexical-only"


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
