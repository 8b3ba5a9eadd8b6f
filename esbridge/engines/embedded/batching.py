"""Concurrent searches of one usearch graph, run together as batches.

usearch's Python binding serialises every call on an index behind a mutex of its own (usearch 2.26): searches
from several threads run one after another, on one core however many there are, while one call with several
queries spreads them over the cores. So searches are combined (flat combining: Hendler, Incze, Shavit and
Tzafrir, "Flat combining and the synchronization-parallelism tradeoff", SPAA 2010): a search that finds no
batch running runs at once, with every search waiting at that moment as one call; searches arriving while it
runs wait (they would wait for the mutex anyway), and the first of them to wake runs all that have gathered.
A lone search is never delayed.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import numpy.typing as npt


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
