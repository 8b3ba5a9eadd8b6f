"""An in-memory engine and embedder for the orchestrator's tests.

The engine answers by the kind of body it gets (BM25, kNN, links, ids) from fixed result lists, and can
fail or stall per retriever, so tests assert on the responses the pipeline gives, not on calls made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from esbridge import errors
from esbridge.config.pipeline import PipelineSettings
from esbridge.engines.base import Dialect, Hit, SearchResult
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher

NOW = datetime(2026, 11, 21, tzinfo=timezone.utc)


def doc(doc_id: str, **fields: Any) -> dict[str, Any]:
    return {"doc_id": doc_id, "title": doc_id.title(), "links": [], **fields}


LEX = [("a#0", 9.0), ("b#0", 7.0), ("c#0", 3.0)]
SEM = [("b#0", 0.9), ("d#0", 0.8), ("a#0", 0.5)]
"""A BM25 and a kNN list that overlap in two documents."""


class MemoryEngine:
    def __init__(
        self,
        bm25: Sequence[tuple[str, float]] = (),
        knn: Sequence[tuple[str, float]] = (),
        sources: Mapping[str, dict[str, Any]] | None = None,
        *,
        fail: Sequence[str] = (),
        stall: Sequence[str] = (),
    ) -> None:
        self.lists = {"bm25": list(bm25), "knn": list(knn)}
        self.sources = dict(sources or {})
        self.fail = set(fail)
        self.stall = set(stall)
        self.started: dict[str, float] = {}

    @property
    def dialect(self) -> Dialect:
        return "opensearch"

    @property
    def url(self) -> str:
        return "memory://"

    def _source(self, item: str) -> dict[str, Any]:
        return self.sources.get(item) or doc(item.split("#")[0])

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        query = body.get("query", {})
        if "ids" in query:
            ids = query["ids"]["values"]
            return SearchResult([Hit(i, 1.0, self._source(i)) for i in ids if i in self.sources], len(ids), 0)
        filters = query.get("bool", {}).get("filter", [])
        if wanted := next((clause["ids"]["values"] for clause in filters if "ids" in clause), None):
            excluded = {v for clause in query["bool"].get("must_not", []) for v in clause["terms"]["status"]}
            known = [item for item in wanted if item in self.sources]
            hits = [Hit(i, 1.0, self.sources[i]) for i in known if self.sources[i].get("status") not in excluded]
            return SearchResult(hits, len(hits), 0)
        if "link_weights" in body.get("_source", []):  # bodies.links_body: own links, backlinks, or both
            clauses = [*query["bool"].get("should", []), *query["bool"]["filter"]]
            own = {v for clause in clauses for v in clause.get("terms", {}).get("doc_id", [])}
            linked = {v for clause in clauses for v in clause.get("terms", {}).get("links", [])}
            hits = [
                Hit(item, 1.0, source)
                for item, source in sorted(self.sources.items(), key=lambda entry: entry[1]["doc_id"])
                if item.endswith("#0") and (source["doc_id"] in own or linked & set(source.get("links", [])))
            ]
            return SearchResult(hits[: int(body["size"])], len(hits), 0)
        kind = "knn" if "knn" in query else "bm25"
        self.started[kind] = asyncio.get_running_loop().time()
        if kind in self.stall:
            await asyncio.sleep(10)
        if kind in self.fail:
            raise errors.EngineResponseError("boom", url=self.url, operation="search", index=index, status=500)
        size = int(body["size"])
        hits = [Hit(item, score, self._source(item)) for item, score in self.lists[kind][:size]]
        return SearchResult(hits, len(hits), 1)

    async def msearch(self, index: str, bodies: Sequence[Mapping[str, Any]]) -> list[SearchResult | Exception]:
        answers: list[SearchResult | Exception] = []
        for body in bodies:
            try:
                answers.append(await self.search(index, body))
            except errors.EngineError as exc:
                answers.append(exc)
        return answers

    async def close(self) -> None:
        pass


class StubEmbedder:
    name = identity = "stub"
    dimension = 3
    max_tokens = 256

    def __init__(self, *, fail: bool = False, delay: float = 0.0) -> None:
        self.fail = fail
        self.delay = delay
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.fail:
            raise errors.ModelUnavailable("weights missing", model="stub")
        return [[1.0, 0.0, 0.0] for _ in texts]


def searcher(engine: MemoryEngine, embedder: StubEmbedder | None = None, **pipeline: Any) -> HybridSearcher:
    settings = PipelineSettings(**pipeline)
    return HybridSearcher(engine, "idx", embedder or StubEmbedder(), settings, clock=lambda: NOW)


def run(hybrid: HybridSearcher, **request: Any) -> Any:
    return asyncio.run(hybrid.search(SearchRequest(**{"query": "solar energy", **request})))
