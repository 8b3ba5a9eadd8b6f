"""Hybrid search p50 with the query embedded by torch or by ONNX Runtime, interleaved query by query in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/hybrid_backends.py ../shared/data/beir/scifact \
        --url http://127.0.0.1:9200 --index minilm-scifact [--default-index eval-scifact] --queries 200

``--index`` holds all-MiniLM-L6-v2's vectors: its variants differ only in how the query is embedded.
``--default-index`` (vectors of the default model, bge-small-en-v1.5 int8) adds the default's row.
Each variant loads as a query-serving process would (one thread), in this process (no child process), and
answers each query through the whole client-side pipeline with the response and vector caches off. The
variants take turns per query so that load from other processes falls on all of them alike. Prints p50/p95
of the whole search and of its embedding step (``details.timings_ms``), and each p50 over torch's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path

from esbridge.config import load_settings
from esbridge.config.embedding import EmbeddingSettings
from esbridge.config.pipeline import CacheSettings
from esbridge.embeddings.base import Embedder
from esbridge.embeddings.factory import load_model
from esbridge.embeddings.profiles import BGE_SMALL, MINILM
from esbridge.engines import connect_async, resolve_kind
from esbridge.evaluation.dataset import judged_queries
from esbridge.query.factory import build_searcher
from esbridge.query.models import SearchRequest
from esbridge.query.orchestrator import HybridSearcher

VARIANTS: dict[str, EmbeddingSettings] = {
    "torch": EmbeddingSettings(model=MINILM, backend="torch", threads=1),
    "onnx-int8": EmbeddingSettings(model=MINILM, backend="onnx", precision="int8", threads=1),
}
BASELINE = "torch"


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(searchers: dict[str, HybridSearcher], texts: list[str], warmup: int) -> dict[str, dict[str, float]]:
    whole: dict[str, list[float]] = {name: [] for name in searchers}
    embed: dict[str, list[float]] = {name: [] for name in searchers}
    for n, text in enumerate(texts):
        for name, searcher in searchers.items():
            response = await searcher.search(SearchRequest(query=text, top_n=10, mode="client"))
            if response.search_mode != "hybrid":
                raise SystemExit(f"{name}: {response.search_mode}: {response.warnings}")
            if n >= warmup:
                whole[name].append(response.took_ms)
                embed[name].append(response.details.timings_ms.get("embed", 0.0))
    base_whole, base_embed = statistics.median(whole[BASELINE]), statistics.median(embed[BASELINE])
    return {
        name: {
            "search_p50_ms": round(statistics.median(whole[name]), 2),
            "search_p95_ms": round(percentile(whole[name], 0.95), 2),
            "embed_p50_ms": round(statistics.median(embed[name]), 2),
            "search_p50_ratio": round(statistics.median(whole[name]) / base_whole, 3),
            "embed_p50_ratio": round(statistics.median(embed[name]) / base_embed, 3),
        }
        for name in searchers
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--url", required=True)
    parser.add_argument("--index", required=True)
    parser.add_argument("--default-index")
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    settings = load_settings(url=args.url, index=args.index)
    texts = list(judged_queries(args.dataset, args.split, args.queries + args.warmup).queries.values())
    variants = dict(VARIANTS)
    index_of = dict.fromkeys(variants, args.index)
    if args.default_index:
        variants["default (bge-small int8)"] = EmbeddingSettings(model=BGE_SMALL, threads=1)
        index_of["default (bge-small int8)"] = args.default_index
    models: dict[str, Embedder] = {name: load_model(variant) for name, variant in variants.items()}
    pipeline = settings.pipeline.model_copy(update={"cache": CacheSettings(embeddings=0, results=0), "mode": "client"})

    async def run() -> dict[str, dict[str, float]]:
        engine = connect_async(settings, kind=resolve_kind(settings))
        try:
            searchers = {
                name: build_searcher(
                    engine, index_of[name], model, pipeline, num_candidates=settings.mapping.hnsw_ef_search, probe=None
                )
                for name, model in models.items()
            }
            return await measure(searchers, texts, args.warmup)
        finally:
            await engine.close()

    print(json.dumps({"queries": len(texts) - args.warmup, "variants": asyncio.run(run())}, indent=2))


if __name__ == "__main__":
    main()
