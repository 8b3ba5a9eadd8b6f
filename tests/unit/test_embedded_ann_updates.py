"""A kNN search re-scoring its candidates while the graph takes in a write (in the graph worker thread)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from esbridge.engines.embedded.ann import EXACT_BELOW, FREE_KEY, VectorIndex


class DroppedDuringSearch:
    """The graph, where a row is removed (a write's update) after the search found it and before it reads it."""

    def __init__(self, graph: Any, row: int) -> None:
        self._graph, self._row = graph, row

    def _drop(self) -> None:
        if self._graph.contains(self._row):
            self._graph.remove(self._row)

    def contains(self, keys: Any) -> Any:
        found = self._graph.contains(keys)
        self._drop()
        return found

    def get(self, keys: Any, **options: Any) -> Any:
        self._drop()
        return self._graph.get(keys, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def test_a_row_dropped_from_the_graph_while_a_search_rescores_is_scored_from_the_database(tmp_path: Path) -> None:
    """Rows read back from the graph after it was asked which it held: one dropped in between came back as None
    and the search failed with a raw 'ValueError: setting an array element with a sequence'."""
    vectors = np.random.default_rng(1).random((50, 4), dtype=np.float32) - 0.5
    index = VectorIndex(tmp_path / "vector.usearch", 4)
    index.apply([], list(range(50)), vectors, seq=1)
    dropped = int(np.argmax(vectors @ vectors[7] / np.linalg.norm(vectors, axis=1)))
    index.graph = DroppedDuringSearch(index.graph, dropped)  # type: ignore[assignment]

    def database(rows: Sequence[int]) -> list[tuple[int, bytes]]:
        return [(row, vectors[row].tobytes()) for row in rows]

    found = index.nearest(vectors[7].tolist(), 5, floats=database)

    assert dropped in found and len(found) == 5


def test_a_row_dropped_from_the_graph_while_a_filtered_search_reads_its_subset_is_left_out(tmp_path: Path) -> None:
    """The same in the exact search of a filter's rows: asked which rows the graph held, then read back."""
    vectors = np.random.default_rng(2).random((50, 4), dtype=np.float32) - 0.5
    index = VectorIndex(tmp_path / "vector.usearch", 4)
    index.apply([], list(range(50)), vectors, seq=1)
    index.graph = DroppedDuringSearch(index.graph, 3)  # type: ignore[assignment]

    found = index.nearest(vectors[3].tolist(), 5, allowed={1, 2, 3, 4, 5, 6}, exact=True)

    assert sorted(found) == [1, 2, 4, 5, 6]


class FreedDuringSearch(DroppedDuringSearch):
    """The graph, whose search meets a slot a removal is freeing: usearch answers it with its free key."""

    def search(self, query: Any, count: int, **options: Any) -> Any:
        found = self._graph.search(query, count, **options)
        keys = np.array(found.keys, dtype=np.uint64)
        keys[0] = FREE_KEY
        return SimpleNamespace(keys=keys, distances=np.array(found.distances))


@pytest.mark.parametrize("rows", [50, EXACT_BELOW + 1])
def test_a_slot_freed_while_a_search_runs_is_no_row(tmp_path: Path, rows: int) -> None:
    """The graph's answer held the free key; taken as a row, it failed the search with a raw OverflowError (reading
    its float32 copy) or came back as a hit."""
    vectors = np.random.default_rng(3).random((rows, 4), dtype=np.float32) - 0.5
    index = VectorIndex(tmp_path / "vector.usearch", 4)
    index.apply([], list(range(rows)), vectors, seq=1)
    index.graph = FreedDuringSearch(index.graph, rows + 1)  # type: ignore[assignment]  # (drops nothing)

    def database(wanted: Sequence[int]) -> list[tuple[int, bytes]]:
        return [(row, vectors[row].tobytes()) for row in wanted]

    found = index.nearest(vectors[9].tolist(), 5, floats=database)

    assert len(found) == 5 and max(found) < rows
