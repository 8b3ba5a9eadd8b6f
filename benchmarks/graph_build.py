"""Recall@10 of the embedded engine's usearch graph against exact search, by build and search width.

    .venv/bin/python benchmarks/graph_build.py --size 300000 --build 64 128 --widths 256 512
    .venv/bin/python benchmarks/graph_build.py --size 200000 --dtypes bf16 i8 --connectivity 8 16 --build 64 \
        --widths 256 --rescore 0 40 100
    .venv/bin/python benchmarks/graph_build.py --size 1000000 --graph /tmp/emb-b1m/vectors/1.vector.usearch \
        --widths 96 160 256 384 512 1024

The vectors and queries are ``bench_embedded``'s (same seeds), so ``--graph`` can read the graph file an
engine run of ``bench_embedded.py`` left (its keys are database rows: chunk number + 1; keys beyond
``--size``, such as that script's write test, are skipped). Without ``--graph`` a graph is built for each
``--dtypes`` x ``--connectivity`` x ``--build`` (cosine), timing the build alone, ``--chunk`` vectors per
``add`` call. ``--rescore N`` (N > 0) asks the graph for N candidates and keeps the 10 nearest by the float32
vectors (exact re-scoring); 0 takes the graph's own top 10.
"""

from __future__ import annotations

import argparse
import itertools
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
    parser.add_argument("--dtypes", nargs="+", default=["bf16"], help="usearch scalar kinds: bf16, i8, f32, ...")
    parser.add_argument("--connectivity", type=int, nargs="+", default=[16], help="M: links per node")
    parser.add_argument("--rescore", type=int, nargs="+", default=[0], help="candidates re-scored exactly (0: none)")
    parser.add_argument("--chunk", type=int, default=BATCH, help="vectors per add call")
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
        batches.append(batch)
    truth = [{row for _, row in top} for top in best]
    full = np.concatenate(batches) if batches else np.zeros((0, 384), dtype=np.float32)

    def recall(graph: Index, label: str) -> None:
        for width, rescore in itertools.product(args.widths, args.rescore):
            graph.expansion_search = width  # type: ignore[misc]  # (a setter the stubs lack)
            kept, spent = [], []
            for q in range(len(queries)):
                began = time.perf_counter()
                keys = graph.search(queries[q], max(20, rescore)).keys
                keys = keys[keys <= args.size]
                if rescore:
                    scores = full[keys.astype(np.int64) - 1] @ queries[q]
                    keys = keys[np.argsort(-scores)]
                spent.append(time.perf_counter() - began)
                kept.append(len(set(keys[:10].tolist()) & truth[q]) / 10)
            print(
                f"{label}, search width {width}, re-scored {rescore}: recall@10 {statistics.mean(kept):.3f}, "
                f"p50 {statistics.median(spent) * 1000:.2f} ms, "
                f"p95 {sorted(spent)[94 * len(spent) // 100] * 1000:.2f} ms",
                flush=True,
            )

    if args.graph is not None:
        graph = Index(ndim=384, metric="cos", dtype="bf16")
        began = time.perf_counter()
        graph.load(str(args.graph))
        recall(graph, f"{args.graph.name} ({len(graph):,} vectors, loaded in {time.perf_counter() - began:.1f} s)")
        return
    for dtype, connectivity, width in itertools.product(args.dtypes, args.connectivity, args.build):
        graph = Index(ndim=384, metric="cos", dtype=dtype, connectivity=connectivity, expansion_add=width)
        began = time.perf_counter()
        for start in range(0, len(full), args.chunk):
            part = full[start : start + args.chunk]
            graph.add(np.arange(start + 1, start + 1 + len(part), dtype=np.uint64), part)
        built = time.perf_counter() - began
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        label = (
            f"{args.size:,} {dtype} M {connectivity}, {width} build candidates "
            f"({built:.0f} s, {args.size / built:,.0f}/s, load {load})"
        )
        recall(graph, label)


if __name__ == "__main__":
    main()
