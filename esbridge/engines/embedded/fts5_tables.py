"""The SQLite FTS5 tables the first embedded engine searched text with (``fts_en_<index id>``, ``fts_ex_<index
id>``, each with its shadow tables). tantivy's directories in ``lexical/`` replaced them; nothing reads or updates
them since, yet they kept a copy of every document's text as it was then, also once the document or its index was
deleted. The first process to open such a database drops them."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from esbridge.engines.embedded.store import Store

log = logging.getLogger(__name__)

_FOUND = (
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'fts_e[nx]_[0-9]*'"
    " AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"
)


def drop_fts5_tables(store: Store) -> None:
    tables = [name for (name,) in store.db.execute(_FOUND)]
    if not tables:
        return
    try:
        with store.write() as db:
            for name in tables:
                db.execute(f'DROP TABLE IF EXISTS "{name}"')  # (another process may have dropped it meanwhile)
    except sqlite3.OperationalError as exc:  # (an SQLite built without FTS5 cannot drop them): they do no harm
        log.warning("%s: the SQLite FTS5 tables of an earlier esbridge could not be dropped: %s", store.path, exc)
        return
    log.info(
        "%s: dropped the SQLite FTS5 tables of an earlier esbridge (%s), which tantivy's full-text indices in lexical/ "
        "replace; the database file keeps its size and later writes reuse the space",
        store.path,
        ", ".join(tables),
    )
