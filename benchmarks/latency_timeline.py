"""A hybrid search's timeline: the medians of the gaps between its steps, from the query to the response.

    .venv/bin/python benchmarks/latency_timeline.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --limit 300 [--processes 0|1]
    scripts/isolate_engine -- .venv/bin/python benchmarks/latency_timeline.py ...   # engine off the model's core

Each query runs once through the client-side pipeline (caches off), then is embedded alone, the two
alternating so that drift cancels. The steps are stamped by the searcher's public collaborators, wrapped
rather than patched: the query vectors (dispatch, arrival), an engine that delegates and stamps its
requests, an embedder that stamps when its worker thread takes the query and gives the vector back, and
the fusion method registered under another name through the plugin hook. A stamp costs a microsecond or
two. Comparing the two sides shows how much later the model gets the query inside a search, and how much
slower it computes there. Used for docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from index_study import study_parser, study_settings

from esbridge.config.pipeline import CacheSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder, start_embedding
from esbridge.embeddings.factory import uncached_model
from esbridge.engines import connect_async, resolve_kind
from esbridge.engines.base import AsyncEngine, SearchResult
from esbridge.evaluation.dataset import judged_queries
from esbridge.query.api import query_embedding
from esbridge.query.factory import build_searcher
from esbridge.query.fusion import FusionContext, fuse, fusion_traits, get_fusion, register_fusion, traits_of
from esbridge.query.models import SearchRequest
from esbridge.query.query_vectors import Embedding, QueryVector, QueryVectors
from esbridge.query.retrieval import Retrieval
from esbridge.query.types import FusionResult, Runs

WARMUP = 10
stamps: dict[str, float] = {}

# (label, from stamp, to stamp), in the order they happen in a search
GAPS = (
    ("request -> embedding dispatched", "start", "dispatch"),
    ("dispatch -> BM25 sent", "dispatch", "bm25_sent"),
    ("dispatch -> query taken by the embedding thread", "dispatch", "handed_over"),
    ("embedding thread: query in -> vector out", "handed_over", "answered"),
    ("vector out -> vector on the loop", "answered", "vector"),
    ("BM25 round trip", "bm25_sent", "bm25_back"),
    ("vector on the loop -> kNN sent", "vector", "knn_sent"),
    ("kNN round trip", "knn_sent", "knn_back"),
    ("kNN back -> fusion starts", "knn_back", "fusion_start"),
    ("fusion", "fusion_start", "fusion_end"),
    ("fusion end -> response returned", "fusion_end", "end"),
    ("whole search", "start", "end"),
)


def stamp(name: str) -> None:
    stamps[name] = time.perf_counter()


class StampedEmbedder:
    """An embedder that stamps when its (worker-thread) call starts and ends."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.identity, self.dimension, self.max_tokens = (
            inner.name,
            inner.identity,
            inner.dimension,
            inner.max_tokens,
        )

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        stamp("handed_over")
        vectors = self.inner.embed(texts)
        stamp("answered")
        return vectors


class StampedVectors(QueryVectors):
    def start(self, text: str) -> Embedding | None:
        stamp("dispatch")
        return super().start(text)

    async def vector(self, query: str, embedding: Embedding | None = None, *, ends: float = math.inf) -> QueryVector:
        vector = await super().vector(query, embedding, ends=ends)
        stamp("vector")
        return vector


class StampedEngine:
    """Delegates to an engine, stamping each search request's departure and return."""

    def __init__(self, inner: AsyncEngine) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, index: str, body: Mapping[str, Any]) -> SearchResult:
        kind = "knn" if "knn" in body or "knn" in body.get("query", {}) else "bm25"
        stamp(f"{kind}_sent")
        result = await self.inner.search(index, body)
        stamp(f"{kind}_back")
        return result


def timed_fusion(name: str) -> str:
    """``name``'s fusion method registered as ``timed-<name>``, stamping around each call."""
    method = get_fusion(name)

    @fusion_traits(reads_texts=traits_of(method).reads_texts, lexical_only=traits_of(method).lexical_only)
    def timed(
        runs: Runs, *, weights: Mapping[str, float] | None = None, context: FusionContext | None = None, **params: Any
    ) -> FusionResult:
        stamp("fusion_start")
        result = fuse(method, runs, weights=weights, context=context or FusionContext(), params=params)
        stamp("fusion_end")
        return result

    register_fusion(f"timed-{name}", timed, replace=True)
    return f"timed-{name}"


def gaps(marks: Mapping[str, float]) -> dict[str, float]:
    return {label: (marks[end] - marks[begin]) * 1000 for label, begin, end in GAPS if begin in marks and end in marks}


async def timeline(settings: Settings, embedder: Embedder, texts: list[str]) -> tuple[dict[str, list[float]], ...]:
    inner = connect_async(settings, kind=resolve_kind(settings))
    engine = cast(AsyncEngine, StampedEngine(inner))
    stamped = cast(Embedder, StampedEmbedder(embedder))
    pipeline = settings.pipeline.model_copy(
        update={
            "cache": CacheSettings(embeddings=0, results=0),
            "mode": "client",
            "fusion": timed_fusion(settings.pipeline.fusion),
        }
    )
    vectors = StampedVectors(stamped, pipeline, engine, settings.index)
    searcher = build_searcher(
        engine, settings.index, stamped, pipeline, num_candidates=settings.mapping.hnsw_ef_search, probe=None
    )
    searcher.retrieval = Retrieval(engine, settings.index, pipeline, vectors)
    inside: dict[str, list[float]] = {}
    alone: dict[str, list[float]] = {}
    try:
        for n, text in enumerate(texts):  # alternating per query, so drift between the two sides cancels
            stamps.clear()
            request = SearchRequest(query=text, top_n=10, mode="client")
            stamp("start")
            await searcher.search(request)
            stamp("end")
            searched = gaps(stamps)
            stamps.clear()
            stamp("dispatch")
            await start_embedding(stamped, [text])
            stamp("vector")
            if n >= WARMUP:
                for sink, values in ((inside, searched), (alone, gaps(stamps))):
                    for label, value in values.items():
                        sink.setdefault(label, []).append(value)
    finally:
        await inner.close()
    return inside, alone


def report(title: str, rows: Mapping[str, list[float]], order: Callable[[str], int]) -> None:
    print(title)
    for label in sorted(rows, key=order):
        print(f"  {label:<52} p50 {statistics.median(rows[label]):7.3f} ms")


def main() -> None:
    parser = study_parser(__doc__, split="test")
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    settings = study_settings(args)
    texts = list(judged_queries(args.dataset, args.split, args.limit).queries.values())
    with uncached_model(query_embedding(settings), processes=args.processes) as embedder:
        inside, alone = asyncio.run(timeline(settings, embedder, texts))
    position = {label: n for n, (label, _, _) in enumerate(GAPS)}
    report("inside a search:", inside, position.__getitem__)
    report("the embedding alone:", alone, position.__getitem__)


if __name__ == "__main__":
    main()
