"""usearch's Python binding from several threads: does it run calls on one index at once?

    .venv/bin/python benchmarks/usearch_calls.py

The engine's graph settings (int8, M 24, 64 build candidates, searched 512 wide for 100 candidates) over
``--size`` random 384-d vectors. Three measurements, each alternated ``--rounds`` times:

- searches a second from one thread and from four (one query a call), with the cores the process kept busy,
  and whether the four threads' answers equal the one thread's;
- one query a call against calls of 2 and 4 queries spread over the cores (``threads=2``);
- the searches another thread completes while a 2,000-vector add runs, added in one call or 64 a call, and the
  longest of them.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from esbridge.engines.embedded import ann


def _graph(size: int) -> tuple[Any, np.ndarray]:
    from usearch.index import Index  # (after esbridge's embedded engine: see its __init__)

    rng = np.random.default_rng(0)
    graph: Any = Index(ndim=384, metric="cos", dtype=ann.DTYPE, connectivity=ann.CONNECTIVITY,
                  expansion_add=ann.EXPANSION_ADD)  # fmt: skip
    graph.add(np.arange(size, dtype=np.uint64), rng.standard_normal((size, 384)).astype(np.float32))
    graph.expansion_search = ann.EXPANSION_SEARCH
    return graph, rng.standard_normal((400, 384)).astype(np.float32)


def _threads(graph: Any, queries: np.ndarray, concurrency: int) -> tuple[float, float, list[list[int]]]:
    """Searches a second, cores busy, and each query's keys, with ``concurrency`` threads."""
    found: list[list[int]] = [[] for _ in queries]

    def work(first: int) -> None:
        for i in range(first, len(queries), concurrency):
            found[i] = graph.search(queries[i], ann.RESCORE).keys.tolist()

    began, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(work, range(concurrency)))
    wall = time.perf_counter() - began
    return len(queries) / wall, (time.process_time() - cpu) / wall, found


def _batched(graph: Any, queries: np.ndarray, per_call: int) -> float:
    began = time.perf_counter()
    for start in range(0, len(queries), per_call):
        part = queries[start : start + per_call]
        graph.search(part if per_call > 1 else part[0], ann.RESCORE, threads=min(per_call, 2))
    return len(queries) / (time.perf_counter() - began)


def _beside_add(graph: Any, queries: np.ndarray, first_key: int, per_call: int) -> tuple[float, int, float]:
    """The add's seconds, and the searches completed meanwhile and the longest of them (ms)."""
    vectors = np.random.default_rng(first_key).standard_normal((2_000, 384)).astype(np.float32)
    keys = np.arange(first_key, first_key + 2_000, dtype=np.uint64)
    stop, took = threading.Event(), []

    def search() -> None:
        i = 0
        while not stop.is_set():
            began = time.perf_counter()
            graph.search(queries[i % len(queries)], ann.RESCORE)
            took.append(time.perf_counter() - began)
            i += 1

    searcher = threading.Thread(target=search)
    searcher.start()
    began = time.perf_counter()
    for start in range(0, len(keys), per_call):
        graph.add(keys[start : start + per_call], vectors[start : start + per_call])
    spent = time.perf_counter() - began
    stop.set()
    searcher.join()
    return spent, len(took), max(took) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    graph, queries = _graph(args.size)
    next_key = args.size
    for turn in range(args.rounds):  # (each turn's adds change the answers: four threads are compared with one)
        rate, cores, alone = _threads(graph, queries, 1)
        print(f"turn {turn}, 1 thread: {rate:.0f}/s, {cores:.2f} cores busy", flush=True)
        rate, cores, found = _threads(graph, queries, 4)
        same = "the same answers" if found == alone else "DIFFERENT answers"
        print(f"turn {turn}, 4 threads: {rate:.0f}/s, {cores:.2f} cores busy, {same}", flush=True)
        rates = {per_call: _batched(graph, queries, per_call) for per_call in (1, 2, 4)}
        print(f"turn {turn}, queries a call 1 / 2 / 4: " + " / ".join(f"{rate:.0f}/s" for rate in rates.values()))
        for per_call in (2_000, 64):
            spent, searches, longest = _beside_add(graph, queries, next_key, per_call)
            next_key += 2_000
            print(f"turn {turn}, a 2,000-vector add {per_call} a call: {spent:.2f} s, {searches} searches beside it, "
                  f"the longest {longest:.0f} ms", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
