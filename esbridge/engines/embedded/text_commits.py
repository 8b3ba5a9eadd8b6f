"""Committing what the full-text writers hold, only beside the database this process opened.

A tantivy commit writes its segments, its record of them and ``state.json`` into the index's folder by its path.
Once the database is gone or a copy was restored in its place (``database_file``), that folder is the copy's, or
none: the changes held came from the database this process opened, so they are not committed there (the copy's
own change log is what a process opened on it catches up from). A check costs one stat, made only when there is
something to commit.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable

from esbridge.engines.embedded.lexical import LexicalIndex
from esbridge.engines.embedded.store import Store

log = logging.getLogger(__name__)


def commit(store: Store, text: LexicalIndex) -> None:
    """Commit what ``text``'s writer holds; refused (naming the database's problem) when it is gone or replaced."""
    if text.dirty:
        problem = store.problem()
        if problem is not None:
            raise sqlite3.OperationalError(f"the full-text changes this process holds were not committed: {problem}")
    text.commit()


def commit_all(store: Store, held: Iterable[tuple[str, LexicalIndex]]) -> None:
    """Commit what the writers of ``held`` (index name, its full-text index) hold, or log for each why not."""
    dirty = [(name, text) for name, text in held if text.dirty]
    if not dirty:
        return
    problem = store.problem()
    for name, text in dirty:
        if problem is not None:  # (kept in the writer: a close drops them, as it drops those of a database gone)
            log.warning("index [%s]: its full-text changes were not committed: %s", name, problem)
            continue
        try:
            text.commit()
        except (OSError, RuntimeError, ValueError) as exc:  # (on a timer's thread: raised, it would be lost)
            log.warning("index [%s]: its full-text changes were not committed: %s", name, exc)


class LaterCommit:
    """Runs ``commit_all(store)`` once writing pauses for a while, so that other processes see the last writes."""

    def __init__(self, commit_all: Callable[[Store], None]) -> None:
        self._commit_all = commit_all
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def after(self, delay_s: float, store: Store) -> None:
        """Commit ``delay_s`` seconds from now, unless another write comes first (it puts the commit off again)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(delay_s, self._commit_all, args=(store,))
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
