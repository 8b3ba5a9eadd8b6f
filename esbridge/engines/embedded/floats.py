"""The float32 copies of one vector field's vectors that kNN re-scoring reads, beside its graph.

``<data_dir>/vectors/<index id>.<field>.f32`` holds each vector at ``row * dimension * 4`` (database rows,
so the file is sparse where other indices' rows fall). Only the process holding the writer lock writes it,
before the graph takes the same vectors in; every process reads it. It is a cache of the database: a
vector read from it is used only when it agrees with the graph's own compact copy of that row (cosine at
least ``AGREEMENT``), and otherwise (a row not written yet, a data directory made before the file existed
and not back-filled yet (``backfill``), a file cut short) the row is read from the database. Reading 100
rows costs about a tenth of a millisecond here, against milliseconds through SQLite, when the file is in the page
cache; when it is not, ``_gathered`` keeps a search from waiting for the disk once per row.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

AGREEMENT = 0.99
"""Cosine between a copy and the graph's int8 (or bfloat16) vector of the row above which the copy is used;
quantization alone keeps it above 0.999."""


FROM_DISK_NS = 50_000
"""A read of one row slower than this did not come from the page cache (one from it takes a few microseconds)."""


class FloatCopies:
    """Opened per call: nothing stays open to leak when the index goes, and an open costs microseconds."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self._width = dimension * 4

    def create(self) -> None:
        """The file, empty when there was none: a new index's, so that its marker (``backfill``) stands over a file
        from the first, as a marker whose copies were deleted does not."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))

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
        width = self._width
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return np.zeros((len(rows), self.dimension), dtype=np.float32)
        try:
            parts = _gathered(fd, width, rows)
        finally:
            os.close(fd)
        # A read returns at most ``width`` bytes, so a short one makes the sum fall short: past the end, none there.
        if sum(map(len, parts)) != width * len(parts):
            parts = [part if len(part) == width else bytes(width) for part in parts]
        return np.frombuffer(b"".join(parts), dtype=np.float32).reshape(len(rows), self.dimension)


def _gathered(fd: int, width: int, rows: Sequence[int]) -> list[bytes]:
    """The rows' bytes, read one after another. Once one read has had to wait (for the disk, or for Python's
    lock as a read lets it go), the kernel is asked to fetch all the rows still to read at once, so that a
    page cache that has let the file go has the disk serve them together rather than one after another."""
    advise = getattr(os, "posix_fadvise", None)  # not on macOS: there the rows are read one by one
    if advise is None:
        return [os.pread(fd, width, row * width) for row in rows]
    parts: list[bytes] = []
    for position, row in enumerate(rows):
        began = time.perf_counter_ns()
        parts.append(os.pread(fd, width, row * width))
        if time.perf_counter_ns() - began > FROM_DISK_NS and position + 1 < len(rows):
            later = rows[position + 1 :]
            try:
                for other in later:
                    advise(fd, other * width, width, os.POSIX_FADV_WILLNEED)
            except OSError:  # a file system that refuses the advice: the reads alone still answer
                pass
            parts.extend(os.pread(fd, width, other * width) for other in later)
            break
    return parts
