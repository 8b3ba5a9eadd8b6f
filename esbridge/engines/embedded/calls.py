"""The calls made on one embedded engine object: their errors translated into esbridge's, and those under way
counted, so that closing the engine waits for them.

Closing the database and the indices under a search that another thread still runs crashed the process (the
search read a connection or an index that was freed). That happens where a search outlives the request that
started it: a sidecar that shuts down while a search it gave up on (its deadline passed) still runs, or an
application that closes the engine while its other threads search. So a close first refuses new calls, then
waits for those under way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from esbridge import errors
from esbridge.engines.embedded.builds import Building
from esbridge.engines.embedded.lexical import Damaged
from esbridge.engines.embedded.mapping import MappingError
from esbridge.engines.embedded.query import Unsupported
from esbridge.engines.embedded.writer import WriterBusy

CLOSE_WAIT_S = 30.0
"""How long a close waits for the calls under way (the sidecar's own shutdown waits as long for its requests)."""


class Calls:
    """Counts the calls under way on one engine (a call made inside another counts once) and translates their
    errors; ``close`` refuses new ones and waits for these."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._state = threading.Condition()
        self._running = 0
        self._closing = False
        self._depth = threading.local()

    @contextmanager
    def call(self, operation: str, index: str | None = None) -> Iterator[None]:
        with self._counted(operation, index, after_commit=False):
            yield

    def after_commit(self, operation: str, index: str | None, step: Callable[[], None]) -> None:
        """Run ``step``, the work that follows a write's commit (bringing the indices up to it), as a call;
        once a close has begun, not at all: the write stands, and the next process catches up with it."""
        with self._counted(operation, index, after_commit=True) as counted:
            if counted:
                step()

    @contextmanager
    def _counted(self, operation: str, index: str | None, *, after_commit: bool) -> Iterator[bool]:
        outer = not getattr(self._depth, "value", 0)
        if outer:
            with self._state:
                closing = self._closing
                if closing and not after_commit:
                    raise errors.EngineUnavailable(
                        "the embedded engine is closed", url=self.url, operation=operation, index=index
                    )
                self._running += not closing
            if closing:
                yield False
                return
        self._depth.value = getattr(self._depth, "value", 0) + 1
        try:
            with self._translated(operation, index):
                yield True
        finally:
            self._depth.value -= 1
            if outer:
                with self._state:
                    self._running -= 1
                    if not self._running:
                        self._state.notify_all()

    def close(self, timeout_s: float = CLOSE_WAIT_S) -> int:
        """Refuse new calls and wait up to ``timeout_s`` for those under way; how many still run then."""
        with self._state:
            self._closing = True
            self._state.wait_for(lambda: self._running == 0, timeout=timeout_s)
            return self._running

    @contextmanager
    def _translated(self, operation: str, index: str | None) -> Iterator[None]:
        url = self.url
        try:
            yield
        except (Unsupported, MappingError) as exc:
            raise errors.RequestRejected(str(exc), url=url, operation=operation, index=index, status=400) from exc
        except WriterBusy as exc:
            raise errors.EngineUnavailable(str(exc), url=url, operation=operation, index=index) from exc
        except (Building, Damaged) as exc:
            raise errors.IndexUnavailable(str(exc), url=url, operation=operation, index=index, status=503) from exc
        except sqlite3.Error as exc:
            raise errors.EngineResponseError(f"SQLite: {exc}", url=url, operation=operation, index=index) from exc
        except OSError as exc:  # (a full disk, a file in the way: a write of the graphs' or full-text files)
            raise errors.EngineResponseError(str(exc), url=url, operation=operation, index=index) from exc
