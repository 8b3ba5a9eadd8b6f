"""A hybrid search's timeline: the medians of the gaps between its steps, from the query to the response.

    .venv/bin/python scripts/latency_timeline.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --limit 300 [--processes 0|1]
    scripts/isolate_engine -- .venv/bin/python scripts/latency_timeline.py ...   # engine off the model's core

Each query runs once through the client-side pipeline (caches off), then is embedded alone, the two
alternating so that drift cancels. The steps are stamped by wrapping the methods that perform them (the
embedding's dispatch and arrival, the engine requests, the hand-over to the model's process, fusion,
shaping); a stamp costs a microsecond or two. Comparing the two sides shows how much later the model's
process gets the query inside a search, and how much slower it computes there.
Used for docs/benchmarks.md (issue 4).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

from index_study import study_parser, study_settings

from esbridge.config.pipeline import CacheSettings
from esbridge.config.settings import Settings
from esbridge.embeddings import worker
from esbridge.embeddings.base import Embedder, start_embedding
from esbridge.embeddings.factory import uncached_model
from esbridge.engines import connect_async, resolve_kind
from esbridge.evaluation.dataset import judged_queries
from esbridge.query import orchestrator
from esbridge.query.api import query_embedding
from esbridge.query.models import SearchRequest

WARMUP = 10
stamps: dict[str, float] = {}

# (label, from stamp, to stamp), in the order they happen in a search
GAPS = (
    ("request -> embedding dispatched", "start", "dispatch"),
    ("dispatch -> BM25 sent", "dispatch", "bm25_sent"),
    ("dispatch -> query handed to the model's process", "dispatch", "handed_over"),
    ("model's process: query in -> vector out", "handed_over", "answered"),
    ("vector out -> vector on the loop", "answered", "vector"),
    ("BM25 round trip", "bm25_sent", "bm25_back"),
    ("vector on the loop -> kNN sent", "vector", "knn_sent"),
    ("kNN round trip", "knn_sent", "knn_back"),
    ("kNN back -> fusion starts", "knn_back", "fusion_start"),
    ("fusion", "fusion_start", "fusion_end"),
    ("fusion end -> shaping starts", "fusion_end", "shape_start"),
    ("shaping", "shape_start", "shape_end"),
    ("shaping end -> response returned", "shape_end", "end"),
    ("whole search", "start", "end"),
)


def stamp(name: str) -> None:
    stamps[name] = time.perf_counter()


def wrap(owner: Any, attribute: str, before: str | None, after: str | None) -> None:
    """Stamp ``before`` and ``after`` (each unless None) around every call of ``owner.attribute`` (a function or
    a coroutine function)."""
    original = getattr(owner, attribute)
    if asyncio.iscoroutinefunction(original):

        async def stamped_async(*args: Any, **kwargs: Any) -> Any:
            if before:
                stamp(before)
            result = await original(*args, **kwargs)
            if after:
                stamp(after)
            return result

        setattr(owner, attribute, stamped_async)
        return

    def stamped(*args: Any, **kwargs: Any) -> Any:
        if before:
            stamp(before)
        result = original(*args, **kwargs)
        if after:
            stamp(after)
        return result

    setattr(owner, attribute, stamped)


def instrument() -> None:
    wrap(orchestrator.HybridSearcher, "_start_embedding", "dispatch", None)
    wrap(orchestrator.HybridSearcher, "_embed", None, "vector")
    wrap(orchestrator.HybridSearcher, "_fuse", "fusion_start", "fusion_end")
    wrap(orchestrator, "shape", "shape_start", "shape_end")
    wrap(worker._Child, "call", "handed_over", "answered")


def gaps(marks: Mapping[str, float]) -> dict[str, float]:
    return {label: (marks[end] - marks[begin]) * 1000 for label, begin, end in GAPS if begin in marks and end in marks}


async def timeline(settings: Settings, embedder: Embedder, texts: list[str]) -> tuple[dict[str, list[float]], ...]:
    engine = connect_async(settings, kind=resolve_kind(settings))
    search = engine.search

    async def stamped_search(index: str, body: Mapping[str, Any]) -> Any:
        kind = "knn" if "knn" in body or "knn" in body.get("query", {}) else "bm25"
        stamp(f"{kind}_sent")
        result = await search(index, body)
        stamp(f"{kind}_back")
        return result

    engine.search = stamped_search  # type: ignore[method-assign]
    pipeline = settings.pipeline.model_copy(update={"cache": CacheSettings(embeddings=0, results=0), "mode": "client"})
    searcher = orchestrator.HybridSearcher(
        engine, settings.index, embedder, pipeline, num_candidates=settings.mapping.hnsw_ef_search
    )
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
            await start_embedding(embedder, [text])
            stamp("vector")
            if n >= WARMUP:
                for sink, values in ((inside, searched), (alone, gaps(stamps))):
                    for label, value in values.items():
                        sink.setdefault(label, []).append(value)
    finally:
        await engine.close()
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
    instrument()
    with uncached_model(query_embedding(settings), processes=args.processes) as embedder:
        inside, alone = asyncio.run(timeline(settings, embedder, texts))
    position = {label: n for n, (label, _, _) in enumerate(GAPS)}
    report("inside a search:", inside, position.__getitem__)
    report("the embedding alone:", alone, position.__getitem__)


if __name__ == "__main__":
    main()
