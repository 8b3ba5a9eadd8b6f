"""Where a hybrid search's time goes: each step alone against the same step inside the pipeline.

    .venv/bin/python benchmarks/latency_breakdown.py ../shared/data/beir/scifact --url http://127.0.0.1:9200 \
        --index bench-scifact --limit 300 [--processes 0|1] [--busy-core]

Per query: embed alone, BM25 alone, kNN alone, then the whole pipeline (client-side fusion, caches
off), whose ``details.timings_ms`` give the same steps as they ran inside it. Prints the medians
(ms). ``--processes`` is ``embedding.query_processes`` (0: the model in this process). ``--busy-core``
first times embedding alone with and without a shell busy loop running, to tell competition for a core
from competition for the interpreter lock.
Used for docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time

from index_study import study_parser, study_settings

from esbridge.config.pipeline import CacheSettings
from esbridge.config.settings import Settings
from esbridge.embeddings.base import Embedder, embed_queries
from esbridge.embeddings.factory import uncached_model
from esbridge.engines import connect_async, resolve_kind
from esbridge.evaluation.dataset import judged_queries
from esbridge.query import bodies, retrievers
from esbridge.query.api import query_embedding
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from esbridge.query.retrievers import RetrievalContext

WARMUP = 10


def embed_medians(embedder: Embedder, texts: list[str]) -> tuple[float, float]:
    def median() -> float:
        samples = []
        for text in texts:
            started = time.perf_counter()
            embed_queries(embedder, [text])
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples[WARMUP:])

    idle = median()
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])  # noqa: S607 - a fixed command
    try:
        time.sleep(0.5)
        loaded = median()
    finally:
        busy.kill()
        busy.wait()
    return idle, loaded


async def breakdown(settings: Settings, embedder: Embedder, texts: list[str]) -> dict[str, list[float]]:
    engine = connect_async(settings, kind=resolve_kind(settings))
    pipeline = settings.pipeline.model_copy(update={"cache": CacheSettings(embeddings=0, results=0), "mode": "client"})
    candidates = settings.mapping.hnsw_ef_search
    searcher = HybridSearcher(engine, settings.index, embedder, pipeline, num_candidates=candidates)
    top_k = pipeline.top_k(10)
    rows: dict[str, list[float]] = {}
    try:
        for n, text in enumerate(texts):
            started = time.perf_counter()
            vector = (await asyncio.to_thread(embedder.embed, [text]))[0]
            alone = {"embed": (time.perf_counter() - started) * 1000}
            context = RetrievalContext(engine.dialect, text, top_k, Filters(), candidates, bodies.DISPLAY_FIELDS)
            for name, body in (
                ("bm25", retrievers.bm25.body(context, None)),
                ("knn", retrievers.knn.body(context, vector)),
            ):
                started = time.perf_counter()
                await engine.search(settings.index, body)
                alone[name] = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            response = await searcher.search(SearchRequest(query=text, top_n=10, mode="client"))
            total = (time.perf_counter() - started) * 1000
            if n < WARMUP:
                continue
            inside = response.details.timings_ms
            for name, value in alone.items():
                rows.setdefault(f"{name} alone", []).append(value)
                rows.setdefault(f"{name} in the pipeline", []).append(inside[name])
            rows.setdefault("pipeline total", []).append(total)
            rows.setdefault("after retrieval", []).append(total - inside["embed"] - inside["knn"])
    finally:
        await engine.close()
    return rows


def main() -> None:
    parser = study_parser(__doc__, split="test")
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--busy-core", action="store_true")
    args = parser.parse_args()
    settings = study_settings(args)
    texts = list(judged_queries(args.dataset, args.split, args.limit).queries.values())
    with uncached_model(query_embedding(settings), processes=args.processes) as embedder:
        if args.busy_core:
            idle, loaded = embed_medians(embedder, texts[:150])
            print(f"embed alone: {idle:.2f} ms; with a busy loop on a core: {loaded:.2f} ms")
        rows = asyncio.run(breakdown(settings, embedder, texts))
    for name, samples in rows.items():
        print(f"{name:<24} p50 {statistics.median(samples):7.2f} ms")


if __name__ == "__main__":
    main()
