"""Recall@10 of the embedded engine's usearch graph against exact search, by build and search width.

    .venv/bin/python benchmarks/graph_build.py --size 300000 --build 64 128 --widths 256 512
    .venv/bin/python benchmarks/graph_build.py --size 1000000 --graph /tmp/emb-b1m/vectors/1.vector.usearch \
        --widths 96 160 256 384 512 1024

The vectors and queries are ``bench_embedded``'s (same seeds), so ``--graph`` can read the graph file an
engine run of ``bench_embedded.py`` left (its keys are database rows: chunk number + 1; keys beyond
``--size``, such as that script's write test, are skipped). Without ``--graph`` a graph is built for each
``--build`` width (bfloat16, cosine, M = 16, as the engine builds them), timing the build alone.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from bench_embedded import BATCH, Vectors
from usearch.index import Index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--build", type=int, nargs="+", default=[64, 128], help="candidates while building")
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 512], help="candidates while searching")
    parser.add_argument("--graph", type=Path, help="a graph file an engine wrote, instead of building")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    vectors = Vectors(384)
    queries = vectors.queries(args.queries)
    best: list[list[tuple[float, int]]] = [[] for _ in range(len(queries))]
    batches = []
    for number, batch in enumerate(vectors.batches(args.size)):
        similarity = batch @ queries.T
        for q in range(len(queries)):
            top = np.argpartition(-similarity[:, q], 10)[:10]
            found = ((float(similarity[t, q]), number * BATCH + int(t) + 1) for t in top)
            best[q] = sorted([*best[q], *found], reverse=True)[:10]
        if args.graph is None:
            batches.append(batch)
    truth = [{row for _, row in top} for top in best]

    def recall(graph: Index, label: str) -> None:
        for width in args.widths:
            graph.expansion_search = width  # type: ignore[misc]  # (a setter the stubs lack)
            kept, spent = [], []
            for q in range(len(queries)):
                began = time.perf_counter()
                keys = graph.search(queries[q], 20).keys.tolist()
                spent.append(time.perf_counter() - began)
                kept.append(len(set([k for k in keys if k <= args.size][:10]) & truth[q]) / 10)
            print(
                f"{label}, search width {width}: recall@10 {statistics.mean(kept):.3f}, "
                f"p50 {statistics.median(spent) * 1000:.2f} ms",
                flush=True,
            )

    if args.graph is not None:
        graph = Index(ndim=384, metric="cos", dtype="bf16")
        began = time.perf_counter()
        graph.load(str(args.graph))
        recall(graph, f"{args.graph.name} ({len(graph):,} vectors, loaded in {time.perf_counter() - began:.1f} s)")
        return
    for width in args.build:
        graph = Index(ndim=384, metric="cos", dtype="bf16", connectivity=16, expansion_add=width)
        began = time.perf_counter()
        for number, batch in enumerate(batches):
            graph.add(np.arange(number * BATCH + 1, number * BATCH + 1 + len(batch), dtype=np.uint64), batch)
        built = time.perf_counter() - began
        recall(graph, f"{args.size:,} vectors, {width} build candidates ({built:.0f} s, {args.size / built:,.0f}/s)")


if __name__ == "__main__":
    main()
