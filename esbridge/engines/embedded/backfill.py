"""Filling in the float32 copies (``floats``) of the vectors a data directory held before it had copies.

A data directory made by an earlier esbridge has no ``.f32`` file (or one with only the rows written since), so
re-scoring would read those rows from the database on every search. The process holding the writer lock fills
them in: when it catches up an index whose copies file has no ``.complete`` marker beside it, a daemon thread
lists the rows the index has then and hands them, a page at a time in row order, to the graph worker, which
reads their vectors from the database and writes them. Once every page is written the file is synced and the
marker created (and synced), so later opens do nothing; a new index gets its marker (and an empty file) when it
is created, as the writer writes every row's copy from the first. A marker whose file is gone is not trusted.
Closing stops the thread between pages and waits for it; a process killed part-way leaves no marker, and the
next writer starts again from the first row (copying a row again writes what the database has). A failure is
logged and leaves no marker, and so does a database gone or replaced by a copy while it runs (``database_file``),
which stops it before its next page; searches are unaffected either way, since a row without a copy that agrees
with its graph is read from the database.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path

import numpy as np

from esbridge.engines.embedded.ann import VectorIndex, copies_path, path_for
from esbridge.engines.embedded.database_file import open_existing
from esbridge.engines.embedded.floats import FloatCopies
from esbridge.engines.embedded.store import VECTOR_BLOBS, IndexRecord, Store

log = logging.getLogger(__name__)

PAGE = 2_000
"""Rows per page handed to the graph worker: about 3 MB of 384-d vectors, tens of milliseconds of its time."""
_CHUNK = 500
"""Rows per SQL statement (one placeholder each)."""


def marker_for(copies: Path) -> Path:
    return copies.with_name(copies.name + ".complete")


def mark_complete(copies: FloatCopies) -> None:
    """Record that every row has its copy: the copies are made durable first (an index without rows gets an
    empty file, so that a marker always has its file), then the (empty) marker and its directory entry, so a
    crash leaves either no marker or a marker over synced copies."""
    marker = marker_for(copies.path)
    marker.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(copies.path, os.O_WRONLY | os.O_CREAT, 0o644))
    copies.sync()
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    folder = os.open(marker.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def mark_new_copies(root: Path, record: IndexRecord) -> None:
    """A new index's copies files, empty and marked complete (its writer writes each row's copy from the first)."""
    for vector in record.schema.vector_fields:
        copies = FloatCopies(copies_path(path_for(root, record.id, vector.path)), vector.dimension)
        try:
            copies.create()  # (before the first write's copies: a marker without its file is not trusted)
            mark_complete(copies)
        except OSError as exc:  # the index stands; its first writer back-fills its few rows instead
            log.warning("index [%s]: the marker of complete float32 copies was not written: %s", record.name, exc)


class Backfills:
    """The back-fills of one data directory, run by its writer; at most one per vector field per process."""

    def __init__(self, workers: Executor) -> None:
        self._workers = workers
        self._lock = threading.Lock()
        self._closed = False
        self._seen: set[tuple[int, str]] = set()
        self._running: dict[tuple[int, str], tuple[threading.Thread, threading.Event]] = {}

    def start(self, store: Store, index_id: int, name: str, graphs: Mapping[str, VectorIndex]) -> None:
        """Start a back-fill for each field of the index whose copies are not marked complete (once per process:
        a failed one is tried again by the next writer process)."""
        with self._lock:
            for path, graph in graphs.items():
                key = (index_id, path)
                if self._closed or key in self._seen:
                    continue
                self._seen.add(key)
                if marker_for(graph.copies.path).exists() and graph.copies.path.exists():
                    continue  # (a marker over no file: the copies were deleted)
                stop = threading.Event()
                thread = threading.Thread(
                    target=self._run,
                    args=(store, index_id, name, path, graph.copies, stop),
                    name=f"esbridge-backfill-{index_id}-{path}",
                    daemon=True,
                )
                self._running[key] = (thread, stop)
                thread.start()

    def stop(self, index_id: int | None = None) -> None:
        """Stop the back-fills of ``index_id`` (all of them for good when None) and wait until they have."""
        with self._lock:
            if index_id is None:
                self._closed = True
            keys = [key for key in self._running if index_id is None or key[0] == index_id]
            stopping = [self._running.pop(key) for key in keys]
        for _, stop in stopping:
            stop.set()
        for thread, _ in stopping:
            thread.join()

    def _run(
        self, store: Store, index_id: int, name: str, path: str, copies: FloatCopies, stop: threading.Event
    ) -> None:
        try:
            db = open_existing(store.path)
            try:
                _check(store)  # (once open: the file this connection reads is the one checked)
                db.execute("PRAGMA busy_timeout=30000")
                found = db.execute("SELECT row FROM docs WHERE index_id = ?", (index_id,))
                rows = np.sort(np.fromiter((row for (row,) in found), dtype=np.int64))
                for start in range(0, len(rows), PAGE):
                    if stop.is_set():
                        return
                    page = rows[start : start + PAGE].tolist()
                    _check(store)  # a copy restored in the meantime has its own copies file in the same place
                    self._workers.submit(_copy_page, db, copies, path, page).result()
                _check(store)
                mark_complete(copies)
            finally:
                db.close()
        except Exception as exc:  # reported, never raised: a thread's exception would be lost, and searches go on
            log.warning(
                "the float32 copies of index [%s] field [%s] were not back-filled: %s; searches read those "
                "vectors from the database until the next writer process completes them",
                name,
                path,
                exc,
            )
        finally:
            with self._lock:
                self._running.pop((index_id, path), None)


def _check(store: Store) -> None:
    """Refuse to go on once the database is gone or replaced (``database_file``), as writes and new connections do:
    the copies and their marker would then be written for another database, or for none."""
    problem = store.problem()
    if problem is not None:
        raise sqlite3.OperationalError(str(problem))


def _copy_page(db: sqlite3.Connection, copies: FloatCopies, path: str, rows: Sequence[int]) -> None:
    """Write the copies of ``rows`` as the database has them now. This runs on the graph worker, the thread that
    writes every other copy just before its graph takes the same vector in, so it is ordered with those writes:
    the vectors read here are at least as new as any the graph already holds, and a vector the writer changes
    after this read is written again (copy and graph) by the worker's next update. A copy written here can thus
    be newer than the graph for a moment, never older than it; and a copy that disagrees with the graph is not
    used (``floats.AGREEMENT``), so even then a search reads that row from the database."""
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        found = db.execute(VECTOR_BLOBS.format(", ".join("?" * len(chunk))), (path, *chunk)).fetchall()
        if found:
            matrix = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32)
            copies.write([row for row, _ in found], matrix.reshape(len(found), copies.dimension))
