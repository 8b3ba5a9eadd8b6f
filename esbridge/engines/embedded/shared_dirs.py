"""The data directories this process has open: one ``DataDir`` per directory and database file, shared by every
engine the process opens on it.

A directory's ``DataDir`` is tied to the database file its first engine opened (``database_file.identity``). An
engine opened there after that file was replaced by a copy (or made anew by another process) gets a ``DataDir``
of its own for the copy: sharing the first one's, it took the first database's full-text state for the copy's
(the copy's later writes went unindexed for good) and its writer lock on the files the restore removed (so
another process could write beside it). The first ``DataDir`` is retired then: it gives its writer lock back and
writes nothing more, its engines being refused anyway.
"""

from __future__ import annotations

import threading
from pathlib import Path

from esbridge.engines.embedded.datadir import DataDir
from esbridge.engines.embedded.store import Store

_SHARED: dict[Path, DataDir] = {}
_SHARED_LOCK = threading.Lock()


def open_shared(store: Store) -> DataDir:
    """The ``DataDir`` of ``store``'s directory for the database file ``store`` opened."""
    key = store.path.parent.resolve()
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        stale = found if found is not None and found.opened != store.opened else None
        if found is None or stale is not None:
            found = _SHARED[key] = DataDir(key, store.opened, store.token)
        found.users += 1
    if stale is not None:
        stale.retire()
    return found


def close_shared(shared: DataDir, store: Store) -> None:
    with _SHARED_LOCK:
        shared.users -= 1
        if shared.users > 0:
            return
        if _SHARED.get(shared.root) is shared:
            del _SHARED[shared.root]
    shared.close(store)
