"""Bulk writes in a background thread, so the next batch embeds while the engine indexes this one.

Embedding is CPU work in this process and indexing is the engine's (usually another process or
machine), so running them side by side hides the shorter of the two. One write is in flight at a
time: writes stay in order, memory stays at two windows, and a failed write is raised at the next
``submit`` or at ``wait``, never lost.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any


class BackgroundWrites:
    """Runs each submitted call after the previous one has finished, in one worker thread."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="esbridge-bulk")
        self._pending: Future[Any] | None = None

    def submit(self, call: Callable[[], Any]) -> None:
        """Wait for the write in flight (raising its error), then start ``call``."""
        self.wait()
        self._pending = self._pool.submit(call)

    def wait(self) -> None:
        """Until the write in flight has finished; raises what it raised."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> BackgroundWrites:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            if exc is None:
                self.wait()
            elif self._pending is not None:
                # The caller is already failing: let the write finish (so nothing runs after return) and
                # keep the caller's error; the write's own outcome is in the writer's totals.
                self._pending.exception()
                self._pending = None
        finally:
            self._pool.shutdown(wait=True)
