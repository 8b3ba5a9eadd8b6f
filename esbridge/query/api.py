"""The Python API: build a searcher from settings and run searches, synchronously or not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from esbridge.config.settings import EmbeddingSettings, Settings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.cached import CachedEmbedder
from esbridge.engines import connect, connect_async, prepare, resolve_kind
from esbridge.errors import ModelUnavailable
from esbridge.query.factory import searcher_for
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher


def open_query_embedder(settings: Settings, *, serving: bool = False) -> tuple[CachedEmbedder | None, str | None]:
    """The configured embedder set up for queries (``embedding.query_threads``), or None and the reason
    when the model cannot load (search degrades).

    ``serving``: for a process that answers many queries; the model then runs in
    ``embedding.query_processes`` child processes (``ProcessEmbedder``) unless that is 0. A one-shot
    search gains nothing from a child process.
    """
    from esbridge.embeddings.factory import open_embedder

    workers = settings.embedding.query_processes if serving else 0
    # A hung child is replaced soon after searches have stopped waiting for it (embed_timeout_s).
    reply_timeout_s = max(10.0, 2 * settings.pipeline.embed_timeout_s)
    try:
        return open_embedder(query_embedding(settings), processes=workers, reply_timeout_s=reply_timeout_s), None
    except ModelUnavailable as exc:
        return None, str(exc)


def query_embedding(settings: Settings) -> EmbeddingSettings:
    """The embedding settings of a process that embeds queries: torch on ``query_threads`` threads, and the
    model an attached index's field map names, if it names one."""
    return settings.index_embedding.model_copy(update={"threads": settings.embedding.query_threads})


@asynccontextmanager
async def searcher(
    settings: Settings, embedder: Embedder | None, *, model_problem: str | None = None, one_shot: bool = False
) -> AsyncIterator[HybridSearcher]:
    """A searcher over the configured index, its engine connection closed on exit. ``one_shot``: the caller
    searches once or a few times and would rather wait for an index the engine is still building
    (``engines.prepare``) than have its searches fail."""
    # Asking a cluster which engine it is, and loading a re-ranker's model, block: in worker threads.
    kind = await asyncio.to_thread(resolve_kind, settings)
    if settings.attached:
        checked = await asyncio.to_thread(_preflight, settings.model_copy(update={"engine": kind}), embedder)
        settings = settings.model_copy(update={"fields": checked.fields})
    engine = connect_async(settings, kind=kind)
    try:
        if one_shot:
            await prepare(engine, settings.index)
        probe = settings.model_copy(update={"engine": kind})  # only when a search may go native
        yield await asyncio.to_thread(
            partial(searcher_for, settings, engine, embedder, probe=probe, model_problem=model_problem)
        )
    finally:
        await engine.close()


def _preflight(settings: Settings, embedder: Embedder | None) -> Settings:
    """An attached index's field map is checked against its mapping, and its vector field against the query
    embedder, before any search: the settings to search with (``esbridge.attach.guard.preflight``)."""
    from esbridge.attach.guard import preflight

    adapter = connect(settings)
    try:
        return preflight(settings, adapter, embedder.dimension if embedder is not None else None)
    finally:
        adapter.close()


def search(
    settings: Settings, request: SearchRequest, embedder: Embedder | None = None, *, model_problem: str | None = None
) -> SearchResponse:
    """One search, synchronously (for scripts and the CLI)."""

    async def run() -> SearchResponse:
        async with searcher(settings, embedder, model_problem=model_problem, one_shot=True) as hybrid:
            return await hybrid.search(request)

    return asyncio.run(run())
