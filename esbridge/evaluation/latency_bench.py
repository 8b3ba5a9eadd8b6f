"""End-to-end search latency per mode, measured in one run on the same index and queries.

    python -m esbridge.evaluation.latency_bench --url URL --index INDEX --queries DATASET [--limit 200]

Modes, interleaved query by query so that load and caches affect them alike: ``bm25`` (the BM25
request alone), ``knn`` (the kNN request alone, vector computed beforehand), ``msearch`` (both in one
round trip), ``embed`` (embedding the query), and the whole client-side hybrid pipeline with
concurrent requests and with one ``_msearch``.
Result and embedding caches are off. Prints p50/p95/p99 in ms and the ratios the goals are stated in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from esbridge.config import load_settings
from esbridge.config.pipeline import CacheSettings
from esbridge.embeddings.sentence_transformer import SentenceTransformerEmbedder
from esbridge.engines import connect_async, resolve_kind
from esbridge.ingest.beir import read_beir_queries, read_qrels
from esbridge.query import bodies
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 2)

    return {"p50": round(statistics.median(ordered), 2), "p95": at(0.95), "p99": at(0.99), "n": len(ordered)}


async def timed(samples: list[float], call: Callable[[], Awaitable[Any]]) -> Any:
    started = time.perf_counter()
    result = await call()
    samples.append((time.perf_counter() - started) * 1000)
    return result


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    settings = load_settings(args.config, url=args.url, index=args.index)
    kind = resolve_kind(settings)
    engine = connect_async(settings, kind=kind)
    embedder = SentenceTransformerEmbedder.from_settings(settings.embedding)
    queries = read_beir_queries(args.queries)
    judged = read_qrels(args.queries, args.split)
    texts = [queries[qid] for qid in judged if qid in queries][: args.limit]
    no_cache = settings.pipeline.model_copy(update={"cache": CacheSettings(embeddings=0, results=0)})
    searchers = {
        mode: HybridSearcher(
            engine,
            settings.index,
            embedder,
            no_cache.model_copy(update={"execution": mode}),
            num_candidates=settings.mapping.hnsw_ef_search,
        )
        for mode in ("concurrent", "msearch")
    }
    names = ("bm25", "knn", "msearch", "embed", "hybrid", "hybrid_msearch")
    samples: dict[str, list[float]] = {name: [] for name in names}
    top_k = settings.pipeline.top_k(args.top_n)
    filters = Filters()

    async def one(text: str, record: bool) -> None:
        sink = samples if record else {name: [] for name in samples}
        lexical = bodies.bm25_body(engine.dialect, text, size=top_k, filters=filters)
        await timed(sink["bm25"], lambda: engine.search(settings.index, lexical))
        vector = await timed(sink["embed"], lambda: asyncio.to_thread(embedder.embed, [text]))
        knn = bodies.knn_body(
            engine.dialect,
            vector[0],
            k=top_k,
            filters=filters,
            num_candidates=max(settings.mapping.hnsw_ef_search, 2 * top_k),
        )
        await timed(sink["knn"], lambda: engine.search(settings.index, knn))
        await timed(sink["msearch"], lambda: engine.msearch(settings.index, [lexical, knn]))
        request = SearchRequest(query=text, top_n=args.top_n)
        await timed(sink["hybrid"], lambda: searchers["concurrent"].search(request))
        await timed(sink["hybrid_msearch"], lambda: searchers["msearch"].search(request))

    try:
        for text in texts[: args.warmup]:
            await one(text, record=False)
        for text in texts:
            await one(text, record=True)
    finally:
        await engine.close()
    report: dict[str, Any] = {name: percentiles(values) for name, values in samples.items()}
    p50 = {name: report[name]["p50"] for name in samples}
    budget = 1.1 * max(p50["bm25"], p50["knn"]) + p50["embed"]
    report["engine"] = kind
    report["queries"] = len(texts)
    report["ratios"] = {
        "hybrid_concurrent_p50 / (1.1 x max(bm25_p50, knn_p50) + embed_p50)": round(p50["hybrid"] / budget, 3),
        "hybrid_msearch_p50 / (1.1 x max(bm25_p50, knn_p50) + embed_p50)": round(p50["hybrid_msearch"] / budget, 3),
        "hybrid_msearch_p50 / hybrid_concurrent_p50": round(p50["hybrid_msearch"] / p50["hybrid"], 3),
        "msearch_p50 / max(bm25_p50, knn_p50)": round(p50["msearch"] / max(p50["bm25"], p50["knn"]), 3),
    }
    report["client_overhead_ms_p50"] = round(p50["hybrid_msearch"] - p50["embed"] - p50["msearch"], 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description="End-to-end search latency per mode.")
    parser.add_argument("--url")
    parser.add_argument("--index")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--queries", type=Path, required=True, help="a BEIR folder (queries.jsonl, qrels/)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--top-n", type=int, default=10)
    print(json.dumps(asyncio.run(bench(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()
