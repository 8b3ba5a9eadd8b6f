"""Holding an embedded data directory's guard from another thread, so that a build cannot start meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from esbridge.engines.embedded import EmbeddedEngine


@contextmanager
def holding_the_guard(engine: EmbeddedEngine) -> Iterator[threading.Event]:
    """Another thread holds the data directory's guard, so a catch-up cannot start, until the block ends or the
    event it yields is set."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with engine._shared._guard:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        yield release
    finally:
        release.set()
        holder.join()
