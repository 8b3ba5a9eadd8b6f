"""In-process cost of the client-side stages after retrieval, for two lists of 100 candidates.

    python -m esbridge.evaluation.stage_bench [--iterations 3000] [--seed 7]

Fusion, recency, graph expansion (on link data already fetched) and shaping are timed one by one and
together; no I/O is involved. Medians and p95 in microseconds are printed as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from esbridge.config.pipeline import PipelineSettings
from esbridge.ids import chunk_id, doc_id_of
from esbridge.query.fusion import get_fusion
from esbridge.query.graph import GraphOptions, expand, seed_docs, with_neighbors
from esbridge.query.recency import apply_recency
from esbridge.query.shaping import ShapeOptions, shape

NOW = datetime(2026, 11, 21, tzinfo=timezone.utc)


def candidates(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)  # noqa: S311 - benchmark data, not secrets
    pool = [chunk_id(f"doc{n}", c) for n in range(150) for c in range(2)]
    bm25_ids = rng.sample(pool, 100)
    knn_ids = rng.sample(bm25_ids[:50], 40) + rng.sample([p for p in pool if p not in bm25_ids], 60)
    bm25 = dict(zip(bm25_ids, sorted((rng.uniform(1, 30) for _ in bm25_ids), reverse=True), strict=True))
    knn = dict(zip(knn_ids, sorted((rng.uniform(0.3, 0.95) for _ in knn_ids), reverse=True), strict=True))
    items = set(bm25) | set(knn)
    doc_of = {item: doc_id_of(item) for item in items}
    modified = {item: NOW - timedelta(days=rng.uniform(0, 90)) for item in items}
    links = {f"doc{n}": [f"doc{rng.randrange(300)}" for _ in range(rng.randrange(6))] for n in range(150)}
    types = {item: rng.choice(["note", "tool", "concept"]) for item in items}
    return {"runs": {"bm25": bm25, "knn": knn}, "doc_of": doc_of, "modified": modified, "links": links, "types": types}


def measure(run: Callable[[], object], iterations: int) -> dict[str, float]:
    run()
    samples = []
    for _ in range(iterations):
        started = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - started) / 1000)
    samples.sort()
    p95 = samples[max(0, math.ceil(round(0.95 * len(samples), 9)) - 1)]  # nearest rank
    return {"median_us": round(statistics.median(samples), 1), "p95_us": round(p95, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fusion", default=PipelineSettings().fusion, help="fusion method (default: the default's)")
    args = parser.parse_args()
    data = candidates(args.seed)
    fuse = get_fusion(args.fusion)
    options = GraphOptions()
    shaping = ShapeOptions(top_n=10, collapse=True, cap_types=True)

    fused = fuse(data["runs"], weights={"bm25": 1.0, "knn": 1.0})
    boosted = apply_recency(fused.scores, data["modified"], NOW)
    # What the one link request returns: the seed documents and the documents linking to them.
    seeds = set(seed_docs(boosted.scores, data["doc_of"], options))
    data["links"] = {doc: out for doc, out in data["links"].items() if doc in seeds or seeds & set(out)}
    expansion = expand(boosted.scores, data["doc_of"], data["links"], options)
    merged = with_neighbors(boosted.scores, expansion)
    doc_of = {**data["doc_of"], **expansion.doc_of}

    def everything() -> object:
        f = fuse(data["runs"], weights={"bm25": 1.0, "knn": 1.0})
        b = apply_recency(f.scores, data["modified"], NOW)
        e = expand(b.scores, data["doc_of"], data["links"], options)
        m = with_neighbors(b.scores, e)
        return shape(m, shaping, doc_of={**data["doc_of"], **e.doc_of}, entity_type_of=data["types"])

    report = {
        "candidates": {name: len(run) for name, run in data["runs"].items()},
        f"fusion_{args.fusion}": measure(
            lambda: fuse(data["runs"], weights={"bm25": 1.0, "knn": 1.0}), args.iterations
        ),
        "recency": measure(lambda: apply_recency(fused.scores, data["modified"], NOW), args.iterations),
        "graph_expand": measure(
            lambda: expand(boosted.scores, data["doc_of"], data["links"], options), args.iterations
        ),
        "shape": measure(lambda: shape(merged, shaping, doc_of=doc_of, entity_type_of=data["types"]), args.iterations),
        "all_stages": measure(everything, args.iterations),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
