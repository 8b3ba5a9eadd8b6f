"""The one place a ``HybridSearcher`` is assembled: for the CLI, the sidecar, the MCP server, eval and bench.

A searcher probes its engine's capabilities once, and only when a search may go native, and reads the
index's model record before its first query (``esbridge.query.model_check``). Where both come from
(``ProbeSource``) is the only thing the interfaces differ in:

* ``Capabilities``: already known (``eval`` and ``bench`` probe before they start);
* an ``Engine``: a connected synchronous adapter, probed in a worker thread (the sidecar holds one);
* ``Settings``: an adapter connected for the probe and closed after it (a one-shot search);
* None: not probed, no record read; native plans then fall back to client-side fusion with the reason.

Both reads end by the search's deadline, their engine calls in the worker thread too (``esbridge.query.preflight``).

A ``Capabilities`` source reaches no engine, so no record is read either: ``eval`` ingests with its own
model first, or with ``--reuse`` checks the record before it starts (``esbridge.evaluation.session``).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from esbridge import errors
from esbridge.config.fields import DEFAULT_FIELD_MAP, FieldMap
from esbridge.config.pipeline import PipelineSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.identity import identity_of
from esbridge.engines import Capabilities, Engine, connect
from esbridge.engines.base import AsyncEngine
from esbridge.engines.call_deadline import DeadlinePassed, engine_calls_until
from esbridge.ingest.vector_agreement import agreement
from esbridge.query.model_check import ModelGuard, searched_mapping
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.preflight import Probe
from esbridge.query.rerank import RERANKERS, Reranker
from esbridge.query.routing import Categories

ProbeSource = Capabilities | Engine | Settings | None
T = TypeVar("T")


def reranker_for(settings: Settings) -> Reranker | None:
    """The configured re-ranker, or None when re-ranking is off."""
    rerank = settings.pipeline.rerank
    return RERANKERS.get_named(rerank.name)(rerank) if rerank.enabled else None


def prober(source: ProbeSource) -> Probe | None:
    """How a searcher learns its engine's capabilities (see the module's docstring)."""
    if source is None:
        return None
    if isinstance(source, Capabilities):
        known = source

        async def given(ends: float) -> Capabilities:
            return known

        return given
    return on_engine(source, lambda engine: engine.probe())


def on_engine(source: Engine | Settings, call: Callable[[Engine], T]) -> Callable[[float], Awaitable[T]]:
    """``call`` in a worker thread on the engine ``source`` reaches: an ``Engine`` held by the caller, or one
    connected for the call from ``Settings`` and closed after it. Given a deadline (``time.perf_counter()``, a
    search's), each engine call the thread makes ends by it (``call_deadline``) and one cut short there raises
    ``DeadlinePassed``, so that no caller takes it for an engine failure of its own."""
    if isinstance(source, Settings):
        settings = source

        def once() -> T:
            adapter = connect(settings)
            try:
                return call(adapter)
            finally:
                adapter.close()

    else:
        engine = source

        def once() -> T:
            return call(engine)

    def until(deadline: float) -> T:
        with engine_calls_until(lambda: deadline):
            try:
                return once()
            except errors.EngineTimeout as exc:
                if time.monotonic() < deadline:
                    raise
                raise DeadlinePassed("its deadline passed") from exc

    async def in_thread(ends: float = math.inf) -> T:
        if math.isinf(ends):
            return await asyncio.to_thread(once)
        return await asyncio.to_thread(until, time.monotonic() + ends - time.perf_counter())

    return in_thread


def build_searcher(
    engine: AsyncEngine,
    index: str,
    embedder: Embedder | None,
    pipeline: PipelineSettings,
    *,
    num_candidates: int,
    probe: ProbeSource,
    reranker: Reranker | None = None,
    model_problem: str | None = None,
    routing: Categories | None = None,
    fields: FieldMap = DEFAULT_FIELD_MAP,
    allow_model_mismatch: bool = False,
) -> HybridSearcher:
    """A searcher over ``index``; ``model_problem`` (why the model did not load) becomes a warning on every answer.

    Where ``probe`` gives an engine (an ``Engine`` or ``Settings``), the searcher also checks the index's
    recorded model against ``embedder`` before each search (``esbridge.query.model_check``).
    """
    return HybridSearcher(
        engine,
        index,
        embedder,
        pipeline,
        num_candidates=num_candidates,
        reranker=reranker,
        probe=prober(probe),
        model_problem=model_problem,
        routing=routing,
        fields=fields,
        model_guard=model_guard(probe, index, embedder, fields, allow_mismatch=allow_model_mismatch),
    )


def model_guard(
    source: ProbeSource, index: str, embedder: Embedder | None, fields: FieldMap, *, allow_mismatch: bool
) -> ModelGuard | None:
    """The check of ``embedder`` against ``index``'s recorded model; None when no query is embedded here (no
    model, or the engine embeds queries) or ``source`` reaches no engine."""
    if embedder is None or fields.vector is None or fields.query_embedding == "engine":
        return None
    if source is None or isinstance(source, Capabilities):
        return None
    vector = fields.vector
    reader = on_engine(source, lambda engine: searched_mapping(engine, index, vector))
    by_vectors = None
    if fields is DEFAULT_FIELD_MAP:  # an attached index's vectors were made from texts esbridge cannot rebuild
        by_vectors = on_engine(source, lambda engine: agreement(engine, index, embedder))
    return ModelGuard(index, identity_of(embedder), reader, allow_mismatch=allow_mismatch, agreement=by_vectors)


def searcher_for(
    settings: Settings,
    engine: AsyncEngine,
    embedder: Embedder | None,
    *,
    probe: ProbeSource,
    model_problem: str | None = None,
) -> HybridSearcher:
    """The searcher the settings describe: their index, pipeline, kNN candidates and re-ranker."""
    return build_searcher(
        engine,
        settings.index,
        embedder,
        settings.pipeline,
        num_candidates=settings.mapping.hnsw_ef_search,
        probe=probe,
        reranker=reranker_for(settings),
        model_problem=model_problem,
        routing=settings.routing,
        fields=settings.field_map,
        allow_model_mismatch=settings.search.allow_model_mismatch,
    )
