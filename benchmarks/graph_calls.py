"""Calls on the usearch graph from several threads: searches one call each (usearch runs one call on an index at
a time) against searches combined into batches (the engine's), and a write's vectors added in one call against
added in slices, alternated in one process on a copy of a data directory ``bench_embedded.py`` left.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/emb-b1m --queries 100
    cp -a /tmp/emb-b1m /tmp/emb-b1m-ab
    .venv/bin/python benchmarks/graph_calls.py --folder /tmp/emb-b1m-ab

Both ways of searching must give the same answers (checked first). Then each takes ``--rounds`` turns, in
alternating order, of searches per second at concurrency 1 and 4 (kNN alone, and half BM25, half kNN), and of
kNN latency from one thread while another writes 2,000 chunks (the graph taking in their vectors); the written
chunks are deleted after each turn, so the copy changes (use a copy).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_embedded import ALIAS, BATCH, Vectors, _load, _rss, _throughput, chunk, texts

from esbridge.blas import limit_blas_threads
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann, batching
from esbridge.query import bodies
from esbridge.query.models import Filters


class OneCallEach:
    """Searches as usearch takes them from several threads: one call each, one at a time."""

    def search(self, graph: Any, query: np.ndarray, count: int, *, exact: bool = False) -> tuple[Any, Any]:
        matches = graph.search(query, count, exact=exact)
        return matches.keys, matches.distances


def _use(engine: EmbeddedEngine, searches: Any) -> None:
    for handles in engine._shared._handles.values():
        for graph in handles.vectors.values():
            graph._searches = searches


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    return (
        f"p50 {ordered[len(ordered) // 2]:.1f} ms, p95 {ordered[int(0.95 * len(ordered))]:.1f} ms, "
        f"max {ordered[-1]:.1f} ms ({len(ordered)} searches)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    limit_blas_threads()
    engine = EmbeddedEngine(args.folder)
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    rng = random.Random(11)  # noqa: S311 (a benchmark's sample)
    phrases = [" ".join(rng.sample([w for w in vocabulary if len(w) > 5], 3)) for _ in range(100)]
    vectors = Vectors(384)
    queries = vectors.queries(100)

    def knn(i: int) -> dict[str, object]:
        return bodies.knn_body("opensearch", queries[i % len(queries)].tolist(), k=10, filters=Filters(),
                               num_candidates=100)  # fmt: skip

    def mixed(i: int) -> None:
        bm25 = bodies.bm25_body("opensearch", phrases[i % len(phrases)], size=10, filters=Filters())
        engine.search(ALIAS, bm25 if i % 2 else knn(i))

    def knn_only(i: int) -> None:
        engine.search(ALIAS, knn(i))

    def search_meanwhile(stop: threading.Event, latencies: list[float]) -> None:
        i = 0
        while not stop.is_set():
            began = time.perf_counter()
            engine.search(ALIAS, knn(i))
            latencies.append((time.perf_counter() - began) * 1000)
            i += 1

    ways = {"one call each": (OneCallEach(), 10**9), "batched, adds in slices": (batching.Searches(), ann.ADD_SLICE)}
    answers = {}
    for name, (searches, _) in ways.items():
        _use(engine, searches)
        answers[name] = [[(hit.id, hit.score) for hit in engine.search(ALIAS, knn(i)).hits] for i in range(30)]
    if len({repr(found) for found in answers.values()}) != 1:
        raise SystemExit("the two ways of searching gave different answers")
    print(f"same answers; {_rss()}; {_load()}", flush=True)

    extra = [vector for batch in vectors.batches(BATCH) for vector in batch][:BATCH]
    rates: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"kNN": [], "mixed": []} for name in ways}
    during: dict[str, list[float]] = {name: [] for name in ways}
    for turn in range(args.rounds):
        for name in list(ways) if turn % 2 == 0 else list(reversed(ways)):
            searches, ann.ADD_SLICE = ways[name]
            _use(engine, searches)
            for label, load in (("kNN", knn_only), ("mixed", mixed)):
                (one_rate, one_cores), (four_rate, four_cores) = _throughput(1, load), _throughput(4, load)
                rates[name][label].append((one_rate, four_rate))
                print(f"turn {turn} {name}, {label}: {one_rate:.0f}/s and {four_rate:.0f}/s = "
                      f"{four_rate / one_rate:.2f}x ({one_cores:.2f} and {four_cores:.2f} cores); {_load()}",
                      flush=True)  # fmt: skip
            written = [
                BulkAction("index", f"g{turn}-{i}", {**chunk(i, corpus, vocabulary, rng), "vector": v.tolist()})
                for i, v in enumerate(extra)
            ]
            stop = threading.Event()
            latencies: list[float] = []
            searcher = threading.Thread(target=search_meanwhile, args=(stop, latencies))
            searcher.start()
            began = time.perf_counter()
            engine.bulk(ALIAS, written)
            engine.search(ALIAS, knn(0))  # (waits for the graph to take the write in)
            took = time.perf_counter() - began
            stop.set()
            searcher.join()
            during[name].extend(latencies)
            print(f"turn {turn} {name}, kNN during a {len(written):,}-chunk write ({took:.1f} s): "
                  f"{_percentiles(latencies)}; {_load()}", flush=True)  # fmt: skip
            engine.bulk(ALIAS, [BulkAction("delete", action.id) for action in written])
    for name in ways:
        for label, turns in rates[name].items():
            one_rate, four_rate = statistics.mean(t[0] for t in turns), statistics.mean(t[1] for t in turns)
            print(f"{name}, {label}: {one_rate:.0f}/s and {four_rate:.0f}/s = {four_rate / one_rate:.2f}x")
        print(f"{name}, kNN during writes: {_percentiles(during[name])}")
    print(f"{_rss()}; {_load()}")
    engine.close()


if __name__ == "__main__":
    main()
