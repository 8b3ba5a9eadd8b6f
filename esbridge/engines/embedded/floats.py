"""The float32 copies of one vector field's vectors that kNN re-scoring reads, beside its graph.

``<data_dir>/vectors/<index id>.<field>.f32`` holds each vector at ``row * dimension * 4`` (database rows,
so the file is sparse where other indices' rows fall). Only the process holding the writer lock writes it,
before the graph takes the same vectors in; every process reads it. It is a cache of the database: a
vector read from it is used only when it agrees with the graph's own compact copy of that row (cosine at
least ``AGREEMENT``), and otherwise (a row not written yet, a data directory made before the file existed, a
file cut short) the row is read from the database. Reading 100 rows costs microseconds from the map,
against milliseconds through SQLite.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

AGREEMENT = 0.99
"""Cosine between a copy and the graph's int8 (or bfloat16) vector of the row above which the copy is used;
quantization alone keeps it above 0.999."""


class FloatCopies:
    """Written through a file opened per call; read through a map of the file that goes with this object."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self._width = dimension * 4
        self._map: tuple[tuple[int, int, int], npt.NDArray[np.float32]] | None = None

    def write(self, rows: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        """Store ``vectors`` (one per row, in order) at their rows; runs of consecutive rows in one write."""
        if not len(rows):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            start = 0
            for end in range(1, len(rows) + 1):
                if end == len(rows) or rows[end] != rows[end - 1] + 1:
                    os.pwrite(fd, data[start:end].tobytes(), rows[start] * self._width)
                    start = end
        finally:
            os.close(fd)

    def sync(self) -> None:
        """Make what was written durable (before the graph's file records the changes it holds)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self, rows: Sequence[int]) -> npt.NDArray[np.float32]:
        """The copies of ``rows``, one per row in order; zeros where the file has none."""
        found = np.zeros((len(rows), self.dimension), dtype=np.float32)
        mapped = self._mapped()
        if mapped is None:
            return found
        index = np.asarray(rows, dtype=np.int64)
        inside = index < len(mapped)
        found[inside] = mapped[index[inside]]
        return found

    def _mapped(self) -> npt.NDArray[np.float32] | None:
        """The file's whole rows, mapped into memory: one search's rows are read without a system call each
        (each would let another thread take Python's lock and wait for it back). Mapped again when the file
        has grown or was replaced; an old map lives on for the reads still using it."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return None
        key = (status.st_ino, status.st_dev, status.st_size)
        current = self._map
        if current is not None and current[0] == key:
            return current[1]
        count = status.st_size // self._width
        if count == 0:
            return None
        with open(self.path, "rb") as file:
            memory = mmap.mmap(file.fileno(), count * self._width, access=mmap.ACCESS_READ)
        mapped = np.frombuffer(memory, dtype=np.float32).reshape(count, self.dimension)
        self._map = (key, mapped)
        return mapped
