"""Reads of the database's change log (``changes``, ``change_floor``; see ``tables``): how far an index has
been written, and which rows changed since a structure last applied the log."""

from __future__ import annotations

import sqlite3


def latest(db: sqlite3.Connection, index_id: int) -> int:
    """The last change written to the index (its floor when the log holds none past it)."""
    found = db.execute("SELECT max(seq) FROM changes WHERE index_id = ?", (index_id,)).fetchone()[0]
    return int(found) if found is not None else floor(db, index_id)


def floor(db: sqlite3.Connection, index_id: int) -> int:
    """The change every persisted structure of the index holds: the log keeps only those after it."""
    found = db.execute("SELECT seq FROM change_floor WHERE index_id = ?", (index_id,)).fetchone()
    return int(found[0]) if found is not None else 0


def changed(db: sqlite3.Connection, index_id: int, after: int) -> list[int]:
    """The rows written or deleted after change ``after``, each once, in row order."""
    query = "SELECT DISTINCT row FROM changes WHERE index_id = ? AND seq > ? ORDER BY row"
    return [row for (row,) in db.execute(query, (index_id, after))]
