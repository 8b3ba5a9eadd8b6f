"""Exact cosine kNN with numpy over a per-index matrix of unit vectors, cached until the index is written.

Exact search is acceptable at its scale: a laptop corpus of up to ~100k chunks is one matrix-vector
product per query (see docs/benchmarks.md for measured latencies); no approximate index is needed.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from esbridge.engines.embedded.mapping import Field


@dataclass(frozen=True)
class _Matrix:
    generation: int
    rows: npt.NDArray[np.int64]
    unit: npt.NDArray[np.float32]


def unit_vectors(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return unit


class VectorCache:
    """(index id, field) -> the index's vectors as one normalised float32 matrix, with their document rows."""

    def __init__(self, filters: int = 16) -> None:
        self._matrices: dict[tuple[int, str], _Matrix] = {}
        # Recent pre-filter results, so a repeated filter (the lifecycle exclusion is in every search) costs nothing.
        self._filters: OrderedDict[tuple[Any, ...], tuple[set[int] | None, set[int]]] = OrderedDict()
        self._filter_slots = filters

    def restriction(
        self, key: tuple[Any, ...], compute: Callable[[], tuple[set[int] | None, set[int]]]
    ) -> tuple[set[int] | None, set[int]]:
        """The cached (allowed, excluded) rows of a filter; ``key`` must include the index generation."""
        found = self._filters.get(key)
        if found is None:
            found = self._filters[key] = compute()
            if len(self._filters) > self._filter_slots:
                self._filters.popitem(last=False)
        else:
            self._filters.move_to_end(key)
        return found

    def matrix(self, db: sqlite3.Connection, index_id: int, generation: int, field: Field) -> _Matrix:
        key = (index_id, field.path)
        cached = self._matrices.get(key)
        if cached is not None and cached.generation == generation:
            return cached
        found = db.execute(
            "SELECT v.row, v.data FROM vectors v JOIN docs d ON d.row = v.row "
            "WHERE d.index_id = ? AND v.field = ? ORDER BY v.row",
            (index_id, field.path),
        ).fetchall()
        rows = np.fromiter((row for row, _ in found), dtype=np.int64, count=len(found))
        data = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32).reshape(len(found), field.dimension)
        matrix = _Matrix(generation, rows, unit_vectors(data))
        self._matrices[key] = matrix
        return matrix

    def forget(self, index_id: int) -> None:
        for key in [key for key in self._matrices if key[0] == index_id]:
            del self._matrices[key]
        for filter_key in [key for key in self._filters if key[0] == index_id]:
            del self._filters[filter_key]

    def nearest(
        self,
        db: sqlite3.Connection,
        index_id: int,
        generation: int,
        field: Field,
        vector: Sequence[float],
        k: int,
        *,
        allowed: Collection[int] | None = None,
        excluded: Collection[int] = (),
    ) -> dict[int, float]:
        """Row -> score of the ``k`` rows nearest ``vector`` (among ``allowed``, or all but ``excluded``).

        The score is (1 + cos) / 2, as OpenSearch's cosinesimil."""
        matrix = self.matrix(db, index_id, generation, field)
        rows = matrix.rows
        query = np.asarray(vector, dtype=np.float32)
        query /= np.linalg.norm(query)
        # One product over the whole matrix, then the filter as a mask: cheaper than copying the allowed rows out.
        similarity = matrix.unit @ query
        available = len(rows)
        if allowed is not None or excluded:
            if allowed is not None:
                mask = np.isin(rows, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
            else:
                mask = ~np.isin(rows, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
            available = int(mask.sum())
            similarity = np.where(mask, similarity, -np.inf)
        k = min(k, available)
        if k == 0:
            return {}
        top = np.argpartition(-similarity, k - 1)[:k]
        top = top[np.lexsort((rows[top], -similarity[top]))]
        return {int(rows[i]): float((1.0 + similarity[i]) / 2.0) for i in top}
