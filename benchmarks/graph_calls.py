"""kNN searches from several threads: one usearch call each (the engine's; usearch's binding runs one call on an
index at a time, behind a mutex of its own) against searches combined into batched calls (``Searches`` below),
alternated in one process on a copy of a data directory ``bench_embedded.py`` left.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/emb-b1m --queries 100
    cp -a /tmp/emb-b1m /tmp/emb-b1m-ab
    .venv/bin/python benchmarks/graph_calls.py --folder /tmp/emb-b1m-ab

Batching: flat combining (Hendler, Incze, Shavit and Tzafrir, "Flat combining and the synchronization-
parallelism tradeoff", SPAA 2010). A search that finds no batch running runs at once, with every search waiting
at that moment as one call, which usearch spreads over the cores; searches arriving meanwhile wait (they would
wait for the mutex anyway) and the first of them to wake runs all that have gathered.

Both ways must give the same answers (checked first). Then each takes ``--rounds`` turns, in alternating
order, of searches per second at concurrency 1 and 4 (kNN alone, and half BM25, half kNN), and of kNN latency
from one thread while another writes 2,000 chunks; the written chunks are deleted after each turn, so the copy
changes (use a copy).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_embedded import ALIAS, BATCH, Vectors, _load, _rss, _throughput, chunk, texts

from esbridge.blas import limit_blas_threads
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.query import bodies
from esbridge.query.models import Filters


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class _Search:
    __slots__ = ("answered", "count", "distances", "done", "error", "exact", "graph", "keys", "query")

    def __init__(self, graph: Any, query: npt.NDArray[np.float32], count: int, exact: bool) -> None:
        self.graph = graph
        self.query = query
        self.count = count
        self.exact = exact
        self.keys: npt.NDArray[np.uint64] = np.empty(0, dtype=np.uint64)
        self.distances: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self.error: BaseException | None = None
        self.answered = self.done = False


class Searches:
    """Runs ``graph.search`` for threads at once, as batches; thread-safe."""

    def __init__(self, threads: int | None = None) -> None:
        self._threads = threads or cores()
        self._state = threading.Condition()
        self._waiting: list[_Search] = []
        self._running = False

    def search(
        self, graph: Any, query: npt.NDArray[np.float32], count: int, *, exact: bool = False
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
        """The keys and distances of ``graph.search(query, count, exact=exact)``, at most ``count`` of each."""
        own = _Search(graph, query, count, exact)
        with self._state:
            self._waiting.append(own)
            while self._running and not own.done:
                self._state.wait()
            batch: list[_Search] = []
            if not own.done:
                self._running = True
                batch, self._waiting = self._waiting, []
        if batch:
            try:
                self._run(batch)
            finally:
                with self._state:
                    for search in batch:
                        if not search.answered and search.error is None:  # (the running thread was interrupted)
                            search.error = RuntimeError("the batch of graph searches this search was in stopped")
                        search.done = True
                    self._running = False
                    self._state.notify_all()
        if own.error is not None:
            raise own.error
        return own.keys, own.distances

    def _run(self, batch: list[_Search]) -> None:
        groups: dict[tuple[int, int, bool], list[_Search]] = {}
        for search in batch:
            groups.setdefault((id(search.graph), search.count, search.exact), []).append(search)
        for group in groups.values():
            first = group[0]
            try:
                if len(group) == 1:
                    matches = first.graph.search(first.query, first.count, exact=first.exact, threads=1)
                    first.keys, first.distances = matches.keys, matches.distances
                    first.answered = True
                    continue
                queries = np.stack([search.query for search in group])
                found = first.graph.search(
                    queries, first.count, exact=first.exact, threads=min(len(group), self._threads)
                )
                for i, search in enumerate(group):
                    kept = int(found.counts[i])
                    search.keys, search.distances = found.keys[i, :kept], found.distances[i, :kept]
                    search.answered = True
            except Exception as exc:  # (each thread raises what its own search met)
                for search in group:
                    search.error = exc


class Batched:
    """The graph, its searches run through ``Searches``."""

    def __init__(self, graph: Any) -> None:
        self._graph, self._searches = graph, Searches()

    def search(self, query: Any, count: int, exact: bool = False, **options: Any) -> Any:
        keys, distances = self._searches.search(self._graph, query, count, exact=exact)
        return SimpleNamespace(keys=keys, distances=distances)

    def __len__(self) -> int:
        return len(self._graph)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def _use(engine: EmbeddedEngine, batched: bool) -> None:
    for handles in engine._shared._handles.values():
        for index in handles.vectors.values():
            current: Any = index.graph
            graph = current._graph if isinstance(current, Batched) else current
            index.graph = Batched(graph) if batched else graph  # type: ignore[assignment]


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

    ways = {"one call each": False, "batched": True}
    answers = {}
    for name, batched in ways.items():
        _use(engine, batched)
        answers[name] = [[(hit.id, hit.score) for hit in engine.search(ALIAS, knn(i)).hits] for i in range(30)]
    if len({repr(found) for found in answers.values()}) != 1:
        raise SystemExit("the two ways of searching gave different answers")
    print(f"same answers; {_rss()}; {_load()}", flush=True)

    extra = [vector for batch in vectors.batches(BATCH) for vector in batch][:BATCH]
    rates: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"kNN": [], "mixed": []} for name in ways}
    during: dict[str, list[float]] = {name: [] for name in ways}
    for turn in range(args.rounds):
        for name in list(ways) if turn % 2 == 0 else list(reversed(ways)):
            _use(engine, ways[name])
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
