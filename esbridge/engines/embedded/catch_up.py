"""Bringing an index's full-text index and graphs up to the database's change log.

The database is the truth; tantivy and the graphs record the last change they hold. A structure built whole
(``fresh``, not ``built``) takes every row; one that holds part takes the rows changed since. Rows go in pages
of ``BATCH``, so a build of a million rows never holds them all at once.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

from esbridge.engines.embedded import changelog
from esbridge.engines.embedded.ann import VectorIndex
from esbridge.engines.embedded.lexical import STATE, LexicalIndex
from esbridge.engines.embedded.progress import read_applied
from esbridge.engines.embedded.store import IndexRecord, Store

BATCH = 20_000
OUT_OF_STEP = "(they or the database were restored from another time, or come from another database)"
log = logging.getLogger(__name__)


def apply_text(store: Store, record: IndexRecord, text: LexicalIndex) -> None:
    with store.read() as db:
        latest = changelog.latest(db, record.id)
        if text.fresh:
            rows = [row for (row,) in db.execute("SELECT row FROM docs WHERE index_id = ?", (record.id,))]
            removed: list[int] = []
        else:
            rows = changelog.changed(db, record.id, text.held)
            removed = rows
        for start in range(0, max(len(rows), 1), BATCH):
            chunk = rows[start : start + BATCH]
            documents = [(row, doc_id, source) for row, (doc_id, source) in store.hits(chunk).items()]
            last = start + BATCH >= len(rows)
            seq = latest if last else text.held
            text.apply(removed[start : start + BATCH], documents, seq, clear=text.fresh and start == 0)
    text.built()


def ahead(root: Path, db: sqlite3.Connection) -> list[int]:
    """The indices with a full-text index or graph in ``root`` that records changes past the database's last, each
    logged: written beside another database (this one at a later time, before a backup of it was restored in its
    place). Their rows are not the database's, and its next changes, numbered as those they record, would be taken
    for applied. Reliable only under the writer lock, when no other process moves the database or the files on."""
    found = []
    for index_id, name in db.execute("SELECT id, name FROM indices").fetchall():
        latest = changelog.latest(db, index_id)
        records = [*root.glob(f"lexical/{index_id}-*/{STATE}"), *root.glob(f"vectors/{index_id}.*.json")]
        if any((read_applied(path) or 0) > latest for path in records):
            log.warning(
                "index [%s]: its full-text index or graphs record changes past this database's change log %s: "
                "building them again from the database",
                name,
                OUT_OF_STEP,
            )
            found.append(index_id)
    return found


def out_of_step(db: sqlite3.Connection, index_id: int, applied: int) -> bool:
    """A structure at change ``applied`` cannot follow the index's log: past its last change, or before the first
    it holds (the changes between are gone, trimmed once every structure held them)."""
    return not changelog.floor(db, index_id) <= applied <= changelog.latest(db, index_id)


def text_built_again(record: IndexRecord, text: LexicalIndex, guard: Callable[[Path], None]) -> LexicalIndex:
    """A full-text index ``out_of_step``, built again: a new one in its folder, for this process to fill."""
    log.warning(
        "index [%s]: its full-text index %s does not follow this database's change log %s: building it again from "
        "the database",
        record.name,
        text.folder,
        OUT_OF_STEP,
    )
    text.close(keep=False)
    shutil.rmtree(text.folder)
    return LexicalIndex(text.folder, text.layout, writer=True, guard=guard, database=text.database)


def apply_vectors(store: Store, record: IndexRecord, path: str, graph: VectorIndex, *, writing: bool) -> None:
    """``writing``: this process holds the writer lock, so it also writes the float32 copies re-scoring reads."""
    with store.read() as db:
        latest, floor = changelog.latest(db, record.id), changelog.floor(db, record.id)
        if graph.built and graph.applied > latest:  # (a graph file is saved after the commits it records)
            _built_again(record, graph)
        if writing and graph.built and graph.copied < graph.applied:
            write_copies(store, record.id, path, graph)
        if graph.built and graph.applied >= latest:
            return
        if graph.built and graph.applied < floor:
            graph.reopen()  # the log moved past this copy (another process saved): start from the file
            if graph.built and graph.applied < floor:  # the file too: it lacks changes the log no longer holds
                _built_again(record, graph)
        if not graph.built:
            rows = [row for (row,) in db.execute("SELECT row FROM docs WHERE index_id = ?", (record.id,))]
            removed: list[int] = []
        else:
            rows = removed = changelog.changed(db, record.id, graph.applied)
        for start in range(0, max(len(rows), 1), BATCH):
            found = store.vector_blobs(rows[start : start + BATCH], path)
            matrix = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32)
            if writing:  # the copies re-scoring reads, before the graph can propose these rows
                graph.copies.write([row for row, _ in found], matrix.reshape(-1, graph.dimension))
            last = start + BATCH >= len(rows)
            graph.apply(
                removed[start : start + BATCH],
                [row for row, _ in found],
                matrix.reshape(-1, graph.dimension),
                latest if last else graph.applied,
            )
        graph.built = True
        if writing:
            graph.copied = graph.applied


def _built_again(record: IndexRecord, graph: VectorIndex) -> None:
    log.warning(
        "index [%s]: the graph %s does not follow this database's change log %s: building it again from the database",
        record.name,
        graph.path,
        OUT_OF_STEP,
    )
    graph.reopen(from_file=False)


def write_copies(store: Store, index_id: int, path: str, graph: VectorIndex) -> None:
    """Write the copies of the rows the graph took in before this process held the writer lock (rows a killed
    writer committed before writing their copies, replayed by a reader), so that a save never records rows
    without copies. Rows up to the log's floor were saved by a writer, after their copies were."""
    applied = graph.applied
    rows = changelog.changed(store.db, index_id, max(graph.copied, changelog.floor(store.db, index_id)))
    for start in range(0, len(rows), BATCH):
        found = store.vector_blobs(rows[start : start + BATCH], path)
        if found:
            matrix = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32)
            graph.copies.write([row for row, _ in found], matrix.reshape(-1, graph.dimension))
    graph.copied = applied
