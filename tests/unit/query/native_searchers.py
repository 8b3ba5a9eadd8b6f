"""Searchers on the native path for the orchestrator tests: in-memory engines behind an emulation of the
engines' native hybrid search (tests/support/native_emulation.py), the capabilities they report, and the
result lists both sides are compared on."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import Dialect, SearchResult
from esbridge.engines.capabilities import Capabilities, elasticsearch_native_hybrid, opensearch_native_hybrid
from esbridge.query.models import SearchRequest, SearchResponse
from esbridge.query.orchestrator import HybridSearcher
from tests.support.memory_engine import NOW, MemoryEngine, StubEmbedder
from tests.support.native_emulation import EmulatedNativeEngine

LEX = [(f"l{i}#0", 20.0 - i) for i in range(15)] + [("both1#0", 4.0), ("both2#0", 3.5)]
SEM = [("both2#0", 0.95), ("both1#0", 0.9)] + [(f"s{i}#0", 0.85 - i / 50) for i in range(15)]


def opensearch(neural: str | None = "3.6.0") -> Capabilities:
    plugins = {"opensearch-knn": "3.6.0", **({"opensearch-neural-search": neural} if neural else {})}
    return Capabilities(
        distribution="opensearch",
        version="3.6.0",
        url="memory://",
        knn=True,
        native_hybrid=opensearch_native_hybrid(plugins),
    )


def elasticsearch(licence: str = "enterprise", version: str = "9.2.0") -> Capabilities:
    return Capabilities(
        distribution="elasticsearch",
        version=version,
        url="memory://",
        knn=True,
        license=licence,
        native_hybrid=elasticsearch_native_hybrid(version, licence),
    )


class ElasticsearchMemory(MemoryEngine):
    """The in-memory engine speaking the Elasticsearch dialect (top-level ``knn``)."""

    @property
    def dialect(self) -> Dialect:
        return "elasticsearch"

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        if "knn" in body:
            body = {**body, "query": {"knn": body["knn"]}}
        return await super().search(index, body)


def native_searcher(
    capabilities: Capabilities | str,
    engine: Any = None,
    embedder: StubEmbedder | None = None,
    **pipeline: Any,
) -> tuple[HybridSearcher, EmulatedNativeEngine]:
    inner = engine or MemoryEngine(LEX, SEM)
    emulated = engine if isinstance(engine, EmulatedNativeEngine) else EmulatedNativeEngine(inner)
    # The default fusion, qpp, has no server-side form; these cases are about a fusion that has one.
    given = {"fusion": "linear", "recency": {"enabled": False}, "cache": {"results": 0}, "top_k_min": 40, **pipeline}
    settings = PipelineSettings(**given)

    async def probe(ends: float) -> Capabilities:
        if isinstance(capabilities, str):
            raise errors.EngineUnavailable(capabilities, url="memory://", operation="probe")
        return capabilities

    searcher = HybridSearcher(emulated, "idx", embedder or StubEmbedder(), settings, clock=lambda: NOW, probe=probe)
    return searcher, emulated


def run(searcher: HybridSearcher, **request: Any) -> SearchResponse:
    return asyncio.run(searcher.search(SearchRequest(**{"query": "solar energy", **request})))


def ranked(response: SearchResponse) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in response.results]
