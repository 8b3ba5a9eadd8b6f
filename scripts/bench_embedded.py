"""Latency of the embedded engine's exact kNN (and BM25) at growing corpus sizes.

    .venv/bin/python scripts/bench_embedded.py --sizes 10000 50000 100000 --dimension 384

Synthetic chunks: random unit vectors, bodies of 40 words drawn from a 5,000-word vocabulary, 10% tagged
"rare". Prints, per size, ingest time, database size, the first kNN query (which loads the vector
matrix) and the median and 95th percentile of warm kNN (unfiltered and pre-filtered) and BM25 queries.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms"


def bench(size: int, dimension: int, queries: int, folder: Path) -> None:
    rng = np.random.default_rng(size)
    vocabulary = [f"w{i}" for i in range(5000)]
    engine = EmbeddedEngine(folder / f"n{size}")
    alias = "bench"
    IndexManager(engine, alias, IndexParameters(dimension=dimension, analysis="full")).create()
    started = time.perf_counter()
    for start in range(0, size, 1000):
        vectors = rng.standard_normal((min(1000, size - start), dimension)).astype(np.float32)
        actions = [
            BulkAction(
                "index",
                f"c{start + i}",
                {
                    "chunk_id": f"c{start + i}",
                    "doc_id": f"d{(start + i) // 4}",
                    "title": " ".join(rng.choice(vocabulary, 4)),
                    "body": " ".join(rng.choice(vocabulary, 40)),
                    "tags": ["rare"] if (start + i) % 10 == 0 else ["common"],
                    "vector": vector.tolist(),
                },
            )
            for i, vector in enumerate(vectors)
        ]
        result = engine.bulk(alias, actions)
        assert not result.failed, result.failed[:1]
    ingest_s = time.perf_counter() - started
    db_mb = sum(p.stat().st_size for p in (folder / f"n{size}").iterdir()) / 1e6

    def knn(filters: Filters) -> float:
        body = bodies.knn_body(
            "opensearch", rng.standard_normal(dimension).tolist(), k=10, filters=filters, num_candidates=100
        )
        began = time.perf_counter()
        assert len(engine.search(alias, body).hits) == 10
        return time.perf_counter() - began

    first = knn(Filters())
    plain = [knn(Filters()) for _ in range(queries)]
    filtered = [knn(Filters(terms={"tags": ["rare"]})) for _ in range(queries)]
    lexical = []
    for _ in range(queries):
        body = bodies.bm25_body("opensearch", " ".join(rng.choice(vocabulary, 3)), size=10, filters=Filters())
        began = time.perf_counter()
        engine.search(alias, body)
        lexical.append(time.perf_counter() - began)
    engine.close()
    print(
        f"{size:>7} chunks x {dimension}d: ingest {ingest_s:6.1f} s ({size / ingest_s:,.0f}/s), db {db_mb:,.0f} MB, "
        f"first kNN {first * 1000:.0f} ms\n"
        f"        kNN k=10            {_ms(plain)}\n"
        f"        kNN k=10, 10% filter {_ms(filtered)}\n"
        f"        BM25 3 words         {_ms(lexical)}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            bench(size, args.dimension, args.queries, Path(folder))


if __name__ == "__main__":
    main()
