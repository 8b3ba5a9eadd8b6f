"""The tables of the embedded engine's database, ``<data_dir>/esbridge.sqlite3``, and the statements that create them:

- ``indices``: name, settings and mappings as created (echoed back verbatim; settings also hold the write
  block, ``index.blocks.write``), a write ``generation``;
- ``aliases``: alias -> index, with ``is_write_index``;
- ``docs``: one row per document: index, ``_id``, ``_source`` as JSON without its vectors;
- ``fieldvals``: (field, value, row) of every keyword (as text), number, boolean and date (epoch ms)
  value, indexed, so filters and sorts are index lookups instead of JSON scans;
- ``vectors``: float32 blobs per (document row, vector field);
- ``changes``: (seq, index, row) of every document written or deleted, in order; the full-text and
  vector indices beside the database (``lexical``, ``ann``) record the last seq they hold and catch up
  from here, so a crash between the database's commit and theirs loses nothing;
- ``origin``: a token drawn when the database is made, which those indices record beside the seq: one recorded
  beside another database (copied in from another data directory) is built again rather than caught up.
"""

from __future__ import annotations

import sqlite3

_TABLES = """
CREATE TABLE IF NOT EXISTS indices (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    settings TEXT NOT NULL,
    mappings TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS aliases (
    alias TEXT NOT NULL,
    index_id INTEGER NOT NULL REFERENCES indices(id) ON DELETE CASCADE,
    is_write_index INTEGER,
    PRIMARY KEY (alias, index_id)
);
CREATE TABLE IF NOT EXISTS docs (
    row INTEGER PRIMARY KEY,
    index_id INTEGER NOT NULL REFERENCES indices(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    source TEXT NOT NULL,
    UNIQUE (index_id, id)
);
CREATE TABLE IF NOT EXISTS fieldvals (
    field TEXT NOT NULL,
    value NOT NULL,
    row INTEGER NOT NULL REFERENCES docs(row) ON DELETE CASCADE,
    PRIMARY KEY (field, value, row)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fieldvals_row ON fieldvals (row);
CREATE TABLE IF NOT EXISTS vectors (
    row INTEGER NOT NULL REFERENCES docs(row) ON DELETE CASCADE,
    field TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (row, field)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    index_id INTEGER NOT NULL,
    row INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS changes_index ON changes (index_id, seq);
CREATE TABLE IF NOT EXISTS change_floor (
    index_id INTEGER PRIMARY KEY,
    seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS origin (token TEXT NOT NULL);
INSERT INTO origin (token) SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM origin);
"""


def create_tables(db: sqlite3.Connection) -> None:
    """Create the tables and indices a database does not have yet, in the caller's transaction."""
    for statement in _TABLES.split(";"):
        if statement.strip():
            db.execute(statement)
