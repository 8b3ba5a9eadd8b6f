"""Searches beside writes: a write's vectors go into the graph in slices, a search does not wait for the graph to
take in the last write, and a thread's first search does not wait for a write under way.

usearch's binding runs one call on an index at a time, so a search waited for the whole of a write's add (a
second for 2,000 vectors at 100k)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.ann import ADD_SLICE, VectorIndex
from tests.support.embedded_index import QUERIES, Answers, answers, at_small_scale, indexed


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


def test_a_thread_s_first_search_does_not_wait_for_a_write_under_way(tmp_path: Path) -> None:
    """A thread's first search registered its database connection under the write lock, so a new thread (a
    server's new worker, a benchmark's searcher) waited for the whole of a write running meanwhile."""
    indexed(tmp_path)
    engine = EmbeddedEngine(tmp_path)
    try:
        before = answers(engine)
        found: list[Answers] = []
        with engine._store.write():  # a write under way, as a bulk request holds it
            searcher = threading.Thread(target=lambda: found.append(answers(engine)))
            searcher.start()
            searcher.join(10)
            waited = searcher.is_alive()
        searcher.join(30)

        assert not waited, "the search waited for the write"
        assert found == [before]
    finally:
        engine.close()
