"""Filter values an earlier esbridge derived otherwise, derived again when its database is first opened.

``fieldvals`` (``tables``) holds what filters and sorts compare, derived from each document's ``_source``
(``values.field_values``). When how a value is derived changes, the documents written before keep the old form until
they are written again, and a filter compares them otherwise than the documents written since. ``VALUES_FORM``, kept
in the database's ``user_version``, says which form its values have. Opening a database below it derives the values
of the changed field types again, ``BATCH`` documents per transaction (rewriting only those that differ, so writers
wait no longer than one batch), then records the form. A process stopped part-way leaves the form unrecorded and the
next one goes through them again; deriving is idempotent.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from typing import TYPE_CHECKING

from esbridge.engines.embedded.mapping import MappingError
from esbridge.engines.embedded.values import ROUNDED, field_values

if TYPE_CHECKING:
    from esbridge.engines.embedded.store import IndexRecord, Store

log = logging.getLogger(__name__)

VALUES_FORM = 1
"""0: as first written. 1: whole numbers without their fraction, ``float``, ``half_float`` and ``scaled_float`` at a
cluster's precision (``values.stored_number``), dates read as ``dates.parse_date`` reads them now."""
CHANGED = ROUNDED | {"date"}
"""The field types whose values changed form; an index without such fields has nothing to derive again."""
BATCH = 500
NEXT_BATCH = "SELECT row, source FROM docs WHERE row > ? AND +index_id = ? ORDER BY row LIMIT ?"
"""The next batch of an index's documents, read along the rows (``+`` keeps SQLite off the ``(index_id, id)`` index,
through which each batch would sort every document of the index again: hours at a million)."""


def values_form(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def derive_old_values(store: Store) -> None:
    """Bring the filter values of a database an earlier esbridge wrote to ``VALUES_FORM``."""
    if values_form(store.db) >= VALUES_FORM:
        return
    started, rewritten = time.monotonic(), 0
    for name in store.index_names():
        if values_form(store.db) >= VALUES_FORM:
            return  # (another process finished meanwhile)
        record = store.index(name)
        if record is None:
            continue
        try:
            fields = sorted(field.path for field in record.schema.filterable_fields if field.type in CHANGED)
        except MappingError as exc:  # (no search can read this index either)
            log.warning("index [%s]: its filter values are left as an earlier esbridge wrote them: %s", name, exc)
            continue
        documents = store.db.execute("SELECT count(*) FROM docs WHERE index_id = ?", (record.id,)).fetchone()[0]
        if fields and documents:
            # Seconds per hundred thousand documents (20 s at a million), before anything else answers: said first.
            log.warning(
                "index [%s]: checking the filter values of its %s documents against how this esbridge derives them "
                "(%s), once",
                name,
                f"{documents:,}",
                ", ".join(fields),
            )
            rewritten += derive_again(store, record, fields)
    with store.write() as db:
        db.execute(f"PRAGMA user_version = {VALUES_FORM}")
    if rewritten:
        log.warning(
            "%s: the filter values of %d documents an earlier esbridge wrote were derived again (%.1f s)",
            store.path,
            rewritten,
            time.monotonic() - started,
        )


def derive_again(store: Store, record: IndexRecord, fields: list[str]) -> int:
    """Derive the values of ``fields`` of the index's documents again where they differ; how many documents did."""
    schema, wanted = record.schema, set(fields)
    by_key = {
        key: kept
        for key, found in schema.filterable_by_key.items()
        if (kept := [field for field in found if field.path in wanted])
    }
    marks = ", ".join("?" * len(fields))
    last, rewritten = 0, 0
    while True:
        with store.write() as db:  # (the sources and their values read and written in one transaction)
            found = db.execute(NEXT_BATCH, (last, record.id, BATCH)).fetchall()
            if not found:
                return rewritten
            now: dict[int, set[tuple[str, object]]] = {row: set() for row, _ in found}
            for row, text in found:
                now[row] = set(field_values(schema, json.loads(text), by_key))
            before: dict[int, set[tuple[str, object]]] = {row: set() for row in now}
            rows = list(now)
            places = ", ".join("?" * len(rows))
            query = f"SELECT row, field, value FROM fieldvals WHERE row IN ({places}) AND field IN ({marks})"  # noqa: S608
            for row, field, value in db.execute(query, (*rows, *fields)):
                before[row].add((field, value))
            stale = [row for row in rows if now[row] != before[row]]
            db.executemany(f"DELETE FROM fieldvals WHERE row = ? AND field IN ({marks})", [(r, *fields) for r in stale])  # noqa: S608
            db.executemany(
                "INSERT OR IGNORE INTO fieldvals (field, value, row) VALUES (?, ?, ?)",
                [(path, value, row) for row in stale for path, value in now[row]],
            )
            rewritten += len(stale)
            last = rows[-1]
