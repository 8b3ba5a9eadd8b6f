"""Bulk writes of this process that have not returned yet, so that a search beside one does not wait for it.

A search must see every write that returned before it began; a write still under way it may see or not, as on
a cluster. Without this, a search that began after a bulk request's transaction committed, or while the
request brought tantivy and the graphs up to it, caught up with the request itself: it waited for the request
to take its documents in and then committed them (at a million chunks, a 2,000-chunk request made searches
beside it wait up to 2-3 s: docs/benchmarks.md). While one bulk request is under way, a search uses the
structures as they were when it began, and commits tantivy only for text an earlier, returned write left.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Before:
    """What an index's structures held when the one write under way on it began."""

    generation: int
    """The index's generation before the write (which bumps it once, when its transaction commits)."""
    text: int
    """The last change tantivy's writer held then: a search commits only if tantivy has not committed it."""

    def serves(self, generation: int, fresh: bool) -> bool:
        """Whether structures at ``generation`` (a whole build under way: ``fresh``) may answer beside the write:
        as it found them, or brought up to it by its own refresh."""
        return not fresh and generation in (self.generation, self.generation + 1)


class WritesUnderWay:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, int] = {}
        self._before: dict[int, Before] = {}

    @contextmanager
    def writing(self, index_id: int, before: Before | None) -> Iterator[None]:
        """Around a bulk write to ``index_id``, from inside its transaction to its return. ``before``: what the
        structures held when it began (None: none are open). Two at once defer nothing."""
        with self._lock:
            count = self._counts.get(index_id, 0) + 1
            self._counts[index_id] = count
            if count == 1 and before is not None:
                self._before[index_id] = before
            else:
                self._before.pop(index_id, None)
        try:
            yield
        finally:
            with self._lock:
                count = self._counts[index_id] - 1
                if count:
                    self._counts[index_id] = count
                else:
                    del self._counts[index_id]
                    self._before.pop(index_id, None)

    def before(self, index_id: int, generation: int) -> Before | None:
        """What a search of the index at ``generation`` (the database's) should search: the structures as the
        one write under way found them, when that write's commit is the only change since; else None."""
        found = self._before.get(index_id)
        if found is None or generation not in (found.generation, found.generation + 1):
            return None
        return found
