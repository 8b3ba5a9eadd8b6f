"""Reading the float32 copies for re-scoring: a ``pread`` per row (the engine's) against a map of the file made
and dropped per search and against libc's ``pread`` called with Python's lock held, alternated in one process
on a data directory ``bench_embedded.py`` left.

    .venv/bin/python benchmarks/bench_embedded.py --size 1000000 --folder /tmp/emb-b1m --queries 100
    .venv/bin/python benchmarks/rescore_reads.py --folder /tmp/emb-b1m

A ``pread`` per row hands Python's lock to other threads and waits for it back, a hundred times a search; a
map kept open avoids that but becomes resident as it is touched (docs/benchmarks.md). A map per search keeps
nothing resident; ``ctypes.PyDLL`` calls never let the lock go. All reads must give the same answers (checked
first); then each takes four turns of the half-BM25, half-kNN load at concurrency 1 and 4, in alternating
order, and 50 kNN searches timed alone.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import mmap
import os
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bench_embedded import ALIAS, Vectors, _load, _rss, _throughput, texts

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, floats
from esbridge.query import bodies
from esbridge.query.models import Filters

Read = Callable[[floats.FloatCopies, Sequence[int]], npt.NDArray[np.float32]]


def map_per_search(copies: floats.FloatCopies, rows: Sequence[int]) -> npt.NDArray[np.float32]:
    found = np.zeros((len(rows), copies.dimension), dtype=np.float32)
    try:
        fd = os.open(copies.path, os.O_RDONLY)
    except FileNotFoundError:
        return found
    try:
        count = os.fstat(fd).st_size // (copies.dimension * 4)
        if count == 0:
            return found
        with mmap.mmap(fd, count * copies.dimension * 4, access=mmap.ACCESS_READ) as mapped:
            mapped.madvise(mmap.MADV_RANDOM)
            index = np.asarray(rows, dtype=np.int64)
            inside = index < count
            view = np.frombuffer(mapped, dtype=np.float32).reshape(count, copies.dimension)
            found[inside] = view[index[inside]]
            del view
    finally:
        os.close(fd)
    return found


_LIBC = ctypes.PyDLL(ctypes.util.find_library("c"), use_errno=True)  # PyDLL: calls keep Python's lock
_PREAD = _LIBC.pread
_PREAD.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)
_PREAD.restype = ctypes.c_ssize_t


def pread_holding_lock(copies: floats.FloatCopies, rows: Sequence[int]) -> npt.NDArray[np.float32]:
    found = np.zeros((len(rows), copies.dimension), dtype=np.float32)
    try:
        fd = os.open(copies.path, os.O_RDONLY)
    except FileNotFoundError:
        return found
    width = copies.dimension * 4
    base = found.ctypes.data
    try:
        for i, row in enumerate(rows):
            _PREAD(fd, base + i * width, width, row * width)
    finally:
        os.close(fd)
    return found


def same_answers(engine: EmbeddedEngine, reads: dict[str, Read], knn: Callable[[int], dict[str, object]]) -> None:
    """Stop the run unless every read gives the same answers to the first 20 kNN searches."""
    answers = {}
    for name, read in reads.items():
        floats.FloatCopies.read = read  # type: ignore[method-assign,assignment]
        answers[name] = [[(hit.id, hit.score) for hit in engine.search(ALIAS, knn(i)).hits] for i in range(20)]
    if len({repr(found) for found in answers.values()}) != 1:
        raise SystemExit("the reads gave different answers")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    reads: dict[str, Read] = {
        "pread per row": floats.FloatCopies.read,
        "map per search": map_per_search,
        "pread holding the lock": pread_holding_lock,
    }
    engine = EmbeddedEngine(args.folder)
    engine.bulk(ALIAS, [BulkAction("delete", "no-such-chunk")])  # the writer: a pending back-fill runs now
    began = time.perf_counter()
    while not list(args.folder.glob("vectors/*.f32.complete")) and time.perf_counter() - began < 600:
        time.sleep(1)
    print(f"copies complete after {time.perf_counter() - began:.0f} s; {_rss()}", flush=True)
    corpus = texts()
    vocabulary = sorted({w for _, text in corpus[:2000] for w in re.findall(r"[a-z]{4,}", text.lower())})
    rng = random.Random(11)  # noqa: S311 (a benchmark's sample)
    phrases = [" ".join(rng.sample([w for w in vocabulary if len(w) > 5], 3)) for _ in range(100)]
    queries = Vectors(384).queries(100)

    def knn(i: int) -> dict[str, object]:
        return bodies.knn_body("opensearch", queries[i % len(queries)].tolist(), k=10, filters=Filters(),
                               num_candidates=100)  # fmt: skip

    def one(i: int) -> None:
        bm25 = bodies.bm25_body("opensearch", phrases[i % len(phrases)], size=10, filters=Filters())
        engine.search(ALIAS, bm25 if i % 2 else knn(i))

    same_answers(engine, reads, knn)
    rates: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in reads}
    alone: dict[str, list[float]] = {name: [] for name in reads}
    for turn in range(args.rounds):
        for name in list(reads) if turn % 2 == 0 else list(reversed(reads)):
            floats.FloatCopies.read = reads[name]  # type: ignore[method-assign,assignment]
            for i in range(50):
                started = time.perf_counter()
                engine.search(ALIAS, knn(i))
                alone[name].append((time.perf_counter() - started) * 1000)
            (one_rate, one_cores), (four_rate, four_cores) = _throughput(1, one), _throughput(4, one)
            rates[name].append((one_rate, four_rate, one_cores, four_cores))
            print(f"turn {turn} {name}: {one_rate:.0f}/s and {four_rate:.0f}/s = {four_rate / one_rate:.2f}x "
                  f"({one_cores:.2f} and {four_cores:.2f} cores); {_load()}", flush=True)  # fmt: skip
    for name, turns in rates.items():
        one_rate, four_rate = statistics.mean(t[0] for t in turns), statistics.mean(t[1] for t in turns)
        ordered = sorted(alone[name])
        print(f"{name}: {one_rate:.0f}/s and {four_rate:.0f}/s = {four_rate / one_rate:.2f}x; kNN alone p50 "
              f"{ordered[len(ordered) // 2]:.2f} ms, p95 {ordered[int(0.95 * len(ordered))]:.2f} ms")  # fmt: skip
    print(f"{_rss()}; {_load()}")
    engine.close()


if __name__ == "__main__":
    main()
