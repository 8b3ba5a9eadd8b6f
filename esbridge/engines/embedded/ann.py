"""Approximate kNN: a usearch HNSW graph per vector field, persisted beside the database.

``<data_dir>/vectors/<index id>.<field>.usearch`` holds the graph and its vectors (int8, cosine; M = 24,
64 candidates while building, 512 while searching: see benchmarks/graph_build.py), keyed by database row;
``.json`` beside it records the last change the file holds. The int8 vectors only choose candidates: the
``RESCORE`` best are ranked and scored by the float32 vectors the database keeps. A file written with
bfloat16 vectors (M = 16) by an earlier esbridge is loaded and searched as it is. Writes update the graph
in memory; the file is rewritten now and then (``save``), and a process that opens it replays the changes
since (``changes`` in the database), so a crash loses no vector and a reopen rebuilds nothing.

A filter is met in one of three ways, whichever is cheapest for its selectivity: a small allowed set is
scanned whole (its vectors read from the graph once, kept for the next search with the same filter, one
matrix product); a large allowed set or a few excluded rows widen the graph search until enough pass;
when widening would approach the whole index the allowed set is scanned. Small indices and indices
without ``index.knn`` are scanned whole (usearch's brute-force scan). Every way ends with the float32
re-scoring. Scores are OpenSearch's cosinesimil, (1 + cos) / 2.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from usearch.index import Index

from esbridge.engines.embedded.floats import AGREEMENT, FloatCopies
from esbridge.engines.embedded.progress import read_applied, read_state, write_applied

EXACT_BELOW = 10_000
"""Indices and allowed sets this small are searched exactly: as fast as the graph, and exact."""
CONNECTIVITY = 24
EXPANSION_ADD = 64
SUBSET_CACHE_ROWS = 50_000
"""Allowed sets up to this size keep their vectors in memory (``SUBSET_CACHE_SLOTS`` of them, newest first)."""
SUBSET_CACHE_SLOTS = 4
EXPANSION_SEARCH = 512
RESCORE = 100
"""Candidates the graph (or a scan of its stored vectors) proposes, re-scored from the float32 vectors."""
DTYPE = "i8"
"""How a new graph stores its vectors; a file written with another kind (bfloat16) keeps its own."""
ADD_SLICE = 64
"""Vectors added to the graph a call: a search waits for the call running (usearch takes one call at a time)."""
FREE_KEY = 2**64 - 1
"""usearch's key of a slot it frees: a search beside a write's removal may return it (no row has it)."""

Floats = Callable[[Sequence[int]], Sequence[tuple[int, bytes]]]
"""(row, float32 bytes) of those of the given rows that still have a vector: the database's copy."""


class _Gate:
    """Any number of searches at once, or one growth of the graph's storage: usearch's ``reserve`` moves
    memory that a search running beside it would still read."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._searches = 0
        self._growing = False

    @contextmanager
    def searching(self) -> Iterator[None]:
        with self._state:
            while self._growing:
                self._state.wait()
            self._searches += 1
        try:
            yield
        finally:
            with self._state:
                self._searches -= 1
                if not self._searches:
                    self._state.notify_all()

    @contextmanager
    def growing(self) -> Iterator[None]:
        with self._state:
            self._growing = True
            while self._searches:
                self._state.wait()
        try:
            yield
        finally:
            with self._state:
                self._growing = False
                self._state.notify_all()


class VectorIndex:
    """The vectors of one field of one index; thread-safe for concurrent searches and one writer.

    ``applied``: the last change the graph holds; ``saved``: the last its file holds; ``copied``: the last
    whose float32 copies are known written (only a writer writes them, so a process that took changes in
    before it became the writer has ``copied`` below ``applied`` until it writes the ones it skipped)."""

    def __init__(self, path: Path, dimension: int, database: str | None = None) -> None:
        """``database``: the database's token (``tables``), recorded with the graph; a graph recorded beside another
        database is not loaded (it is built again)."""
        self.path = path
        self.dimension = dimension
        self.database = database
        self.lock = threading.Lock()
        self._gate = _Gate()
        self._subsets_lock = threading.Lock()
        self.copies = FloatCopies(copies_path(path), dimension)
        self.reopen()

    def reopen(self, *, from_file: bool = True) -> None:
        """Start again from the file (empty, and not ``built``, when there is none, it is unreadable, or not
        ``from_file``)."""
        self.graph = self._empty()
        self._subsets: OrderedDict[Hashable, tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]] = OrderedDict()
        self.applied = self.saved = self.copied = 0
        self.built = False
        state = read_state(self.path.with_suffix(".json")) if from_file else None
        applied = read_applied(self.path.with_suffix(".json")) if state is not None else None
        if state is not None and self.database is not None and state.get("database", self.database) != self.database:
            applied = None  # recorded beside another database: built again from this one
        if self.path.exists() and applied is not None:
            try:
                self.graph.load(str(self.path))
                self.graph.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # the file keeps its own width
            except (OSError, ValueError, RuntimeError):
                self.graph = self._empty()  # unreadable: the caller rebuilds it from the database
            else:
                self.applied = self.saved = self.copied = applied
                self.built = True

    def _empty(self) -> Index:
        return Index(
            ndim=self.dimension,
            metric="cos",
            dtype=DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def __len__(self) -> int:
        return int(self.graph.size)

    def apply(self, removed: Sequence[int], rows: Sequence[int], vectors: npt.NDArray[np.float32], seq: int) -> None:
        """Drop ``removed`` rows, add ``rows`` with ``vectors``, and note ``seq`` as applied."""
        with self.lock:
            if removed:
                keys = np.asarray(removed, dtype=np.uint64)
                present = keys[self.graph.contains(keys)]
                if len(present):
                    self.graph.remove(present)
            keys = np.asarray(rows, dtype=np.uint64)
            for start in range(0, len(keys), ADD_SLICE):
                part = slice(start, start + ADD_SLICE)
                grows = len(self.graph) + len(keys[part]) >= self.graph.capacity  # usearch reserves inside this add
                with self._gate.growing() if grows else contextlib.nullcontext():
                    self.graph.add(keys[part], vectors[part])
            self.applied = seq

    def save(self) -> None:
        """Write the graph and the change it holds; the file is replaced whole, so a crash keeps the old one."""
        with self.lock:
            applied = self.applied
            self.path.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.path.with_suffix(".tmp")
            self.graph.save(str(scratch))
            os.replace(scratch, self.path)
            self.copies.sync()
            write_applied(self.path.with_suffix(".json"), applied, {"database": self.database} if self.database else {})
            self.saved = applied

    def nearest(
        self,
        vector: Sequence[float],
        k: int,
        *,
        allowed: Collection[int] | None = None,
        excluded: Collection[int] = (),
        exact: bool = False,
        subset: Hashable = None,
        behind: Mapping[int, npt.NDArray[np.float32] | None] | None = None,
        floats: Floats | None = None,
    ) -> dict[int, float]:
        """Row -> score of the ``k`` rows nearest ``vector`` among ``allowed`` (or all), never ``excluded``.

        ``subset`` names ``allowed`` (it must change when the rows or the index do): an allowed set searched
        exactly keeps its vectors in memory under that name for the next search with the same filter.
        ``behind``: the rows written since the graph's last completed update, with their vectors now (None
        when gone); the graph's answer for them is dropped and they are scored exactly instead, so a write
        is searchable before the graph has taken it in. ``floats``: the float32 vectors by row; with it the
        graph proposes ``RESCORE`` candidates (at least ``k``) and they are ranked by those vectors, so the
        graph's compact vectors decide only which rows are candidates, never a score."""
        query = np.asarray(vector, dtype=np.float32)
        query = query / np.linalg.norm(query)
        pool = max(k, RESCORE) if floats is not None else k
        with self._gate.searching():
            found = self._nearest(query, pool + len(behind or ()), allowed, excluded, exact, subset)
        if behind:
            found = {row: score for row, score in found.items() if row not in behind}
        found = self._rescored(query, found, k, floats)
        written = [
            (row, value)
            for row, value in (behind or {}).items()
            if value is not None and row not in excluded and (allowed is None or row in allowed)
        ]
        if written:  # scored as re-scoring scores rows, so a row scores alike before and after the graph has it
            matrix = np.stack([value for _, value in written])
            lengths = np.linalg.norm(matrix, axis=1)
            kept = lengths > 0
            cosines = _cosines(matrix[kept], lengths[kept], query)
            rows = [row for (row, _), ok in zip(written, kept.tolist(), strict=True) if ok]
            found.update(zip(rows, ((1.0 + cosine) / 2.0 for cosine in cosines.tolist()), strict=True))
        return dict(sorted(found.items(), key=lambda item: (-item[1], item[0]))[:k])

    def _rescored(
        self, query: npt.NDArray[np.float32], found: dict[int, float], k: int, floats: Floats | None
    ) -> dict[int, float]:
        """The best ``k`` of ``found``, scored from their float32 vectors when ``floats`` is given: the copies
        beside the graph where they agree with it, the database's otherwise (rows without a vector are gone)."""
        if floats is None or not found:
            return dict(sorted(found.items(), key=lambda item: (-item[1], item[0]))[:k])
        rows = sorted(found)
        matrix = self.copies.read(rows)
        keys = np.asarray(rows, dtype=np.uint64)
        with self._gate.searching():  # (None for a row the graph lacks, or dropped since: updates run beside)
            found_now = self.graph.get(keys, dtype="f32")
        compact = _stacked(found_now, len(rows), self.dimension)
        norms = np.linalg.norm(matrix, axis=1)
        lengths = np.linalg.norm(compact, axis=1)
        # Row by row throughout, so a row's figures do not depend on which rows came with it.
        agree = (norms > 0) & (lengths > 0)
        agree &= np.einsum("ij,ij->i", matrix, compact) >= AGREEMENT * norms * lengths
        cosines = _cosines(matrix, np.where(agree, norms, 1.0).astype(np.float32), query)
        if agree.all():
            scored = dict(zip(rows, cosines.tolist(), strict=True))
        else:
            scored = dict(zip(keys[agree].tolist(), cosines[agree].tolist(), strict=True))
            missing = [row for row, ok in zip(rows, agree.tolist(), strict=True) if not ok]
            stored_rows = floats(missing)
            if stored_rows:
                exact = np.frombuffer(b"".join(blob for _, blob in stored_rows), dtype=np.float32)
                exact = exact.reshape(len(stored_rows), self.dimension)
                exact_lengths = np.linalg.norm(exact, axis=1)
                exact_lengths[exact_lengths == 0] = 1.0
                scored.update(
                    zip((row for row, _ in stored_rows), _cosines(exact, exact_lengths, query).tolist(), strict=True)
                )
        ranked = heapq.nsmallest(k, scored.items(), key=lambda item: (-item[1], item[0]))
        return {row: (1.0 + cosine) / 2.0 for row, cosine in ranked}

    def _nearest(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: Collection[int] | None,
        excluded: Collection[int],
        exact: bool,
        subset: Hashable,
    ) -> dict[int, float]:
        size = len(self)
        if size == 0 or k < 1 or (allowed is not None and not allowed):
            return {}  # usearch refuses a search for 0 results
        if allowed is not None:
            if exact or len(allowed) <= max(EXACT_BELOW, size // 20):
                return self._exact(query, k, allowed, subset)
            wanted = min(size, int(k * size / max(len(allowed), 1) * 2) + k)
            return self._widening(query, k, wanted, lambda row: row in allowed, allowed, subset)
        if exact or size <= EXACT_BELOW:
            return self._brute_force(query, k, excluded)
        passes = (lambda row: row not in excluded) if excluded else None
        return self._widening(query, k, k + len(excluded), passes, None, None)

    def _brute_force(self, query: npt.NDArray[np.float32], k: int, excluded: Collection[int]) -> dict[int, float]:
        """Exact search over the whole graph (usearch's own SIMD scan), then ``excluded`` dropped."""
        matches = self.graph.search(query, min(len(self), k + len(excluded)), exact=True)
        found = {
            int(key): 1.0 - float(distance) / 2.0
            for key, distance in zip(matches.keys.tolist(), matches.distances.tolist(), strict=True)
            if key not in excluded and key != FREE_KEY
        }
        return dict(sorted(found.items(), key=lambda item: (-item[1], item[0]))[:k])

    def _widening(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        wanted: int,
        passes: Callable[[int], bool] | None,
        allowed: Collection[int] | None,
        subset: Hashable,
    ) -> dict[int, float]:
        """``passes``: whether a row may be returned (None: every row)."""
        size = len(self)
        while True:
            wanted = min(wanted, size)
            matches = self.graph.search(query, wanted)
            if passes is None:
                keys, distances = matches.keys, matches.distances
                taken = keys != FREE_KEY
                keys, distances = keys[taken][:k], distances[taken][:k]
                found = dict(zip(keys.tolist(), (1.0 - distances.astype(np.float64) / 2.0).tolist(), strict=True))
                if len(found) == k or wanted >= size or len(matches.keys) < wanted:
                    return found
                wanted *= 4
                continue
            found = {}
            for key, distance in zip(matches.keys.tolist(), matches.distances.tolist(), strict=True):
                if key != FREE_KEY and passes(key):
                    found[int(key)] = 1.0 - float(distance) / 2.0
                    if len(found) == k:
                        return found
            if wanted >= size or len(matches.keys) < wanted:
                return found
            if allowed is not None and wanted * 4 >= size:
                return self._exact(query, k, allowed, subset)
            wanted *= 4

    def _exact(
        self, query: npt.NDArray[np.float32], k: int, allowed: Collection[int], subset: Hashable
    ) -> dict[int, float]:
        found = self._subsets.get(subset) if subset is not None else None
        if found is None:
            keys = np.fromiter(allowed, dtype=np.uint64, count=len(allowed))
            got = self.graph.get(keys) if len(keys) else None  # (None for a row dropped meanwhile, as above)
            stored = list(got) if got is not None else []
            keys = keys[np.asarray([value is not None for value in stored], dtype=bool)] if stored else keys[:0]
            kept = [value for value in stored if value is not None]
            matrix = np.asarray(kept, dtype=np.float32).reshape(len(keys), self.dimension)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            found = (keys, (matrix / norms).astype(np.float32))
            if subset is not None and len(keys) <= SUBSET_CACHE_ROWS:
                with self._subsets_lock:
                    self._subsets[subset] = found
                    while len(self._subsets) > SUBSET_CACHE_SLOTS:
                        self._subsets.popitem(last=False)
        keys, unit = found
        if len(keys) == 0:
            return {}
        similarity = unit @ (query / np.linalg.norm(query))
        k = min(k, len(keys))
        top = np.argpartition(-similarity, k - 1)[:k]
        top = top[np.lexsort((keys[top], -similarity[top]))]
        return {int(keys[i]): float((1.0 + similarity[i]) / 2.0) for i in top}


def _stacked(vectors: Any, count: int, dimension: int) -> npt.NDArray[np.float32]:
    """What ``Index.get`` gave for several keys (a tuple, None for a key it lacks), as one matrix: zeros where
    a key had no vector."""
    if vectors is not None and not any(vector is None for vector in vectors):
        return np.asarray(vectors, dtype=np.float32).reshape(count, dimension)
    matrix = np.zeros((count, dimension), dtype=np.float32)
    for i, vector in enumerate(vectors or ()):
        if vector is not None:
            matrix[i] = vector
    return matrix


def _cosines(
    matrix: npt.NDArray[np.float32], lengths: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each row's cosine with the unit ``query``. Row by row (einsum), not by BLAS, whose sums depend on how many
    rows it is given: a row scores the same whichever rows are scored with it."""
    cosines: npt.NDArray[np.float32] = np.einsum("ij,j->i", matrix, query) / lengths
    return cosines


def path_for(root: Path, index_id: int, field: str) -> Path:
    return root / "vectors" / f"{index_id}.{field}.usearch"


def copies_path(path: Path) -> Path:
    """The float32 copies beside the graph at ``path``."""
    return path.with_suffix(".f32")


def remove_all(root: Path, index_id: int) -> None:
    base = root / "vectors"
    if base.exists():
        for path in base.glob(f"{index_id}.*"):
            path.unlink(missing_ok=True)


def owners(root: Path) -> set[int]:
    """The index ids of the files in ``vectors/``."""
    return {
        int(path.name.split(".", 1)[0]) for path in root.glob("vectors/*.*") if path.name.split(".", 1)[0].isdigit()
    }
