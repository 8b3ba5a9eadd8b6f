"""Searches beside the graph's writes: searches from several threads run together as batches, adds in slices,
and a search does not wait for the graph to take in the last write.

usearch's binding runs one call on an index at a time, so searches from several threads used one core between
them, and a search waited for the whole of a write's add (a second for 2,000 vectors at 100k)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.ann import ADD_SLICE, VectorIndex
from esbridge.engines.embedded.batching import Searches
from tests.support.embedded_index import QUERIES, Answers, answers, at_small_scale, indexed


def _graph(count: int, dimension: int = 16, seed: int = 0) -> tuple[Any, np.ndarray]:
    from usearch.index import Index  # (after esbridge's embedded engine: see its __init__)

    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    graph = Index(ndim=dimension, metric="cos", dtype="f32", connectivity=16)
    graph.add(np.arange(count, dtype=np.uint64), vectors)
    return graph, vectors


class HeldFirstSearch:
    """The graph, where the first search waits until ``release`` is set (so that others gather meanwhile) and
    every search's number of queries is recorded."""

    def __init__(self, graph: Any) -> None:
        self._graph = graph
        self.started = threading.Event()
        self.release = threading.Event()
        self.queries: list[int] = []

    def search(self, queries: np.ndarray, count: int, **options: Any) -> Any:
        self.queries.append(1 if queries.ndim == 1 else len(queries))
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(10)
        return self._graph.search(queries, count, **options)


def test_searches_from_several_threads_get_the_answers_each_would_get_alone() -> None:
    graph, _ = _graph(2_000)
    queries = np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32)
    alone = [graph.search(query, 20, threads=1) for query in queries]
    searches = Searches(threads=2)
    got: dict[int, tuple[list[int], list[float]]] = {}

    def search(first: int) -> None:
        for i in range(first, len(queries), 8):
            keys, distances = searches.search(graph, queries[i], 20)
            got[i] = (keys.tolist(), distances.tolist())

    threads = [threading.Thread(target=search, args=(first,)) for first in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(got) == list(range(len(queries)))
    for i, matches in enumerate(alone):
        assert got[i][0] == matches.keys.tolist()
        assert got[i][1] == pytest.approx(matches.distances.tolist())


def test_searches_arriving_while_one_runs_run_together_as_one_call() -> None:
    graph, vectors = _graph(500)
    held = HeldFirstSearch(graph)
    searches = Searches(threads=2)
    answers: dict[int, list[int]] = {}

    def search(i: int) -> None:
        answers[i] = searches.search(held, vectors[i], 5)[0].tolist()

    first = threading.Thread(target=search, args=(0,))
    first.start()
    assert held.started.wait(10)
    others = [threading.Thread(target=search, args=(i,)) for i in (1, 2, 3)]
    for thread in others:
        thread.start()
    while len(searches._waiting) < 3:  # (the three wait for the running search)
        threading.Event().wait(0.01)
    held.release.set()
    for thread in [first, *others]:
        thread.join(10)

    assert held.queries == [1, 3]
    for i in range(4):
        assert answers[i][0] == i  # each vector is its own nearest


def test_a_failed_batch_fails_every_search_in_it_and_the_next_searches_run() -> None:
    class Failing:
        def search(self, *args: Any, **options: Any) -> Any:
            raise RuntimeError("graph unreadable")

    searches = Searches(threads=2)
    with pytest.raises(RuntimeError, match="graph unreadable"):
        searches.search(Failing(), np.ones(16, dtype=np.float32), 5)
    graph, vectors = _graph(100)
    assert searches.search(graph, vectors[3], 1)[0].tolist() == [3]


class PausedAfterAnAdd:
    """The graph of ``index``, where the first add that does not grow its storage (searches wait for those)
    returns only once a search has run beside the write."""

    def __init__(self, index: VectorIndex) -> None:
        self._graph, self._index = index.graph, index
        self.added = threading.Event()
        self.searched = threading.Event()

    def add(self, keys: Any, vectors: Any, **options: Any) -> Any:
        result = self._graph.add(keys, vectors, **options)
        if not self.added.is_set() and not self._index._gate._growing:
            self.added.set()
            self.searched.wait(10)
        return result

    def __len__(self) -> int:
        return len(self._graph)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def test_a_search_runs_between_the_parts_of_a_large_write(tmp_path: Path) -> None:
    """A search waited for the whole add of a write's vectors; now it waits for one slice at most."""
    rows = 8 * ADD_SLICE
    vectors = np.random.default_rng(3).standard_normal((rows, 8)).astype(np.float32)
    index = VectorIndex(tmp_path / "vector.usearch", 8)
    paused = PausedAfterAnAdd(index)
    index.graph = paused  # type: ignore[assignment]
    seen: list[int] = []

    def search() -> None:
        assert paused.added.wait(10)
        seen.append(len(index.nearest(vectors[0].tolist(), 5)))
        seen.append(len(paused._graph))
        paused.searched.set()

    searcher = threading.Thread(target=search)
    searcher.start()
    index.apply([], list(range(rows)), vectors, seq=1)
    searcher.join(10)

    assert seen[0] == 5
    assert seen[1] < rows  # the search ran while the write was still being added
    assert len(index) == rows and index.applied == 1


def test_a_search_after_a_write_does_not_wait_for_the_graph_to_take_it_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search waited for the graph update of the last write to finish (a second or more for 2,000 chunks at a
    million); it now scores the rows the update is still adding exactly, as they will score once it is done."""
    at_small_scale(monkeypatch)
    indexed(tmp_path)
    engine = EmbeddedEngine(tmp_path)
    try:
        answers(engine)
        graph = next(iter(engine._shared._handles.values())).vectors["v"]
        release = threading.Event()
        apply = graph.apply

        def held_apply(*args: Any, **options: Any) -> None:
            assert release.wait(30)
            apply(*args, **options)

        graph.apply = held_apply  # type: ignore[method-assign]
        near = QUERIES[0] + np.float32(0.001)
        assert not engine.bulk("idx", [BulkAction("index", "new", {"tag": "t", "v": near.tolist()})]).failed
        found: list[Answers] = []
        searcher = threading.Thread(target=lambda: found.append(answers(engine)))
        searcher.start()
        searcher.join(10)
        held = searcher.is_alive()
        release.set()
        searcher.join(30)

        assert not held, "the search waited for the graph update"
        assert found[0][0][0][0] == "new"
        next(iter(engine._shared._handles.values())).settle()
        assert graph.applied > 0 and answers(engine)[0][0] == found[0][0][0]  # the same score, from the graph
    finally:
        release.set()
        engine.close()
