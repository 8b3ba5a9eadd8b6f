"""The SQLite database behind the embedded engine: catalog, documents, vectors, and the log of changes.

One file, ``<data_dir>/esbridge.sqlite3``, in WAL mode; its tables are described in ``tables``.

Every write request runs in one transaction (``BEGIN IMMEDIATE`` .. ``COMMIT``), so a crash leaves
the database at the last committed request. Each thread reads through its own connection (WAL lets
readers run beside the writer); writes are serialised by a lock.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from esbridge.engines.blocks import write_blocked
from esbridge.engines.embedded import database_file
from esbridge.engines.embedded.fts5_tables import drop_fts5_tables
from esbridge.engines.embedded.location import make_data_dir
from esbridge.engines.embedded.mapping import Field, Schema, schema_of
from esbridge.engines.embedded.tables import create_tables
from esbridge.engines.embedded.value_forms import derive_old_values
from esbridge.engines.embedded.values import field_values, put_path, sql_date, without_path

DB_FILE = "esbridge.sqlite3"
VECTOR_BLOBS = "SELECT row, data FROM vectors WHERE field = ? AND length(data) > 0 AND row IN ({}) ORDER BY row"
"""The vectors the graphs and re-scoring read. An empty one, which older versions stored, is no vector, here and
wherever a vector is read."""


LOG_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True)
class IndexRecord:
    id: int
    name: str
    settings: dict[str, Any]
    mappings: dict[str, Any]
    generation: int

    @functools.cached_property
    def schema(self) -> Schema:
        return schema_of(self.mappings, self.settings.get("index", {}))

    @property
    def write_blocked(self) -> bool:
        return write_blocked(self.settings.get("index", {}))


class Store:
    """The database; each thread reads through its own connection, writes go one at a time under ``lock``."""

    def __init__(self, data_dir: Path) -> None:
        make_data_dir(data_dir)
        self.path = data_dir / DB_FILE
        self.lock = threading.RLock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()  # (not ``lock``: a thread's first read must not wait for a write)
        self._closed = False
        self._records: dict[str, tuple[tuple[Any, ...], IndexRecord]] = {}
        self._commits = 0
        self._opened: tuple[int, int] | None = None
        self._creating = True  # only this first connection may make the database
        self.db.execute("PRAGMA journal_mode=WAL")
        self._opened, self._creating = database_file.identity(self.path), False
        with self.write() as db:
            create_tables(db)
            self.token: str = db.execute("SELECT token FROM origin").fetchone()[0]  # (``tables``: origin)
        drop_fts5_tables(self)
        derive_old_values(self)

    def _connect(self) -> sqlite3.Connection:
        if not self._creating:  # open the database this process opened, or none
            problem = self.problem()
            if problem is not None:
                raise sqlite3.OperationalError(f"unable to open database file: {problem}")
            db = database_file.open_existing(self.path)
        else:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        # NORMAL in WAL mode: a process crash loses nothing committed; a power cut may lose the last commits.
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=30000")
        db.create_function("esb_date", 1, sql_date, deterministic=True)
        return db

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._connect()
            with self._connections_lock:
                if self._closed:
                    db.close()
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                self._connections.append(db)
            self._local.db = db
        return db

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything inside commits together or not at all."""
        with self.lock:
            db = self.db
            problem = self.problem()  # a connection opened before would commit into a file no one reads again
            if problem is not None:
                raise sqlite3.OperationalError(f"cannot write: {problem}")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            self._commits += 1

    @property
    def opened(self) -> tuple[int, int] | None:
        """The database file this store opened (``database_file.identity``)."""
        return self._opened

    def problem(self) -> database_file.Problem | None:
        """Why this process can no longer use its database (``database_file.problem``), or None."""
        return database_file.problem(self.path, self._opened)

    def version(self) -> tuple[int, int]:
        """A value that changes whenever a write commits: in this process (counted here) or in another (SQLite's
        ``data_version``, which does not count the commits of the connection that asks)."""
        return self._commits, int(self.db.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        db = self.db
        if db.in_transaction:  # nested in a write or a read of this thread: already consistent
            yield db
            return
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    def empty_log(self) -> None:
        """Copy the write-ahead log into the database and empty it once it passes ``LOG_LIMIT`` bytes. SQLite's
        own checkpoints cannot restart a log that some reader always uses, as the graph worker's reads
        overlapping each next write would: the log then grows by every write."""
        try:
            size = self.path.with_name(self.path.name + "-wal").stat().st_size
        except FileNotFoundError:
            return
        if size > LOG_LIMIT:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self.lock, self._connections_lock:
            self._closed = True
            for db in self._connections:
                db.close()
            self._connections.clear()

    # Catalog

    def index(self, name: str) -> IndexRecord | None:
        row = self.db.execute(
            "SELECT id, name, settings, mappings, generation FROM indices WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return None
        key = (row[0], row[4], row[2], row[3])
        cached = self._records.get(row[1])
        if cached is not None and cached[0] == key:
            return cached[1]  # unchanged since last read: the same record, its schema already parsed
        record = IndexRecord(row[0], row[1], json.loads(row[2]), json.loads(row[3]), row[4])
        self._records[row[1]] = (key, record)
        return record

    def index_names(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT name FROM indices ORDER BY name")]

    def alias_targets(self, alias: str) -> list[tuple[str, bool | None]]:
        rows = self.db.execute(
            "SELECT i.name, a.is_write_index FROM aliases a JOIN indices i ON i.id = a.index_id "
            "WHERE a.alias = ? ORDER BY i.name",
            (alias,),
        )
        return [(name, None if flag is None else bool(flag)) for name, flag in rows]

    def remove_alias(self, alias: str, index_id: int) -> bool:
        """Whether ``alias`` pointed at the index (and no longer does)."""
        cursor = self.db.execute("DELETE FROM aliases WHERE alias = ? AND index_id = ?", (alias, index_id))
        return cursor.rowcount > 0

    def put_alias(self, alias: str, index_id: int, write_index: bool | None) -> None:
        """Point ``alias`` at the index; as its write index, the alias's other indices stop being it (their flag
        unset, not false: one left alone in the alias takes writes again, as it did before)."""
        self.db.execute(
            "INSERT OR REPLACE INTO aliases (alias, index_id, is_write_index) VALUES (?, ?, ?)",
            (alias, index_id, None if write_index is None else int(write_index)),
        )
        if write_index:
            self.db.execute(
                "UPDATE aliases SET is_write_index = NULL WHERE alias = ? AND index_id != ? AND is_write_index",
                (alias, index_id),
            )

    def alias_names(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT DISTINCT alias FROM aliases ORDER BY alias")]

    def create_index(self, name: str, settings: Mapping[str, Any], mappings: Mapping[str, Any], schema: Schema) -> None:
        cursor = self.db.execute(
            "INSERT INTO indices (name, settings, mappings) VALUES (?, ?, ?)",
            (name, json.dumps(settings), json.dumps(mappings)),
        )
        assert cursor.lastrowid is not None

    def delete_index(self, record: IndexRecord) -> None:
        for table in ("vectors", "fieldvals"):
            self.db.execute(f"DELETE FROM {table} WHERE row IN (SELECT row FROM docs WHERE index_id = ?)", (record.id,))  # noqa: S608
        self.db.execute("DELETE FROM docs WHERE index_id = ?", (record.id,))
        self.db.execute("DELETE FROM changes WHERE index_id = ?", (record.id,))
        self.db.execute("DELETE FROM change_floor WHERE index_id = ?", (record.id,))
        self.db.execute("DELETE FROM indices WHERE id = ?", (record.id,))

    def replace_settings(self, record: IndexRecord, settings: Mapping[str, Any]) -> None:
        """Store new settings; only dynamic ones change (the write block), so nothing else is rebuilt."""
        self.db.execute("UPDATE indices SET settings = ? WHERE id = ?", (json.dumps(settings), record.id))

    def replace_meta(self, record: IndexRecord, meta: Mapping[str, Any]) -> None:
        """Store a new mapping ``_meta``; no search reads it, so nothing is rebuilt."""
        mappings = {**record.mappings, "_meta": dict(meta)}
        self.db.execute("UPDATE indices SET mappings = ? WHERE id = ?", (json.dumps(mappings), record.id))

    def replace_mappings(self, record: IndexRecord, mappings: Mapping[str, Any]) -> None:
        """Store new mappings and re-derive the filter values (the full-text index follows its layout digest)."""
        self.db.execute(
            "UPDATE indices SET mappings = ?, generation = generation + 1 WHERE id = ?",
            (json.dumps(mappings), record.id),
        )
        updated = self.index(record.name)
        assert updated is not None
        schema = updated.schema
        self.db.execute("DELETE FROM fieldvals WHERE row IN (SELECT row FROM docs WHERE index_id = ?)", (record.id,))
        for row, text in self.db.execute("SELECT row, source FROM docs WHERE index_id = ?", (record.id,)).fetchall():
            source = json.loads(text)
            self.db.executemany(
                "INSERT OR IGNORE INTO fieldvals (field, value, row) VALUES (?, ?, ?)",
                [(path, value, row) for path, value in field_values(schema, source)],
            )

    # Documents

    def bump(self, index_id: int) -> None:
        self.db.execute("UPDATE indices SET generation = generation + 1 WHERE id = ?", (index_id,))

    def document_row(self, index_id: int, doc_id: str) -> int | None:
        row = self.db.execute("SELECT row FROM docs WHERE index_id = ? AND id = ?", (index_id, doc_id)).fetchone()
        return None if row is None else int(row[0])

    def full_source(self, row: int) -> dict[str, Any]:
        source: dict[str, Any] = json.loads(
            self.db.execute("SELECT source FROM docs WHERE row = ?", (row,)).fetchone()[0]
        )
        for field, data in self.db.execute(
            "SELECT field, data FROM vectors WHERE row = ? AND length(data) > 0", (row,)
        ):
            put_path(source, field.split("."), np.frombuffer(data, dtype=np.float32).tolist())
        return source

    def put_document(self, record: IndexRecord, schema: Schema, doc_id: str, source: Mapping[str, Any]) -> None:
        self.put_documents(record, schema, [(doc_id, source)])

    def put_documents(
        self, record: IndexRecord, schema: Schema, documents: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> None:
        """Store ``documents`` (``_id``, checked source; each ``_id`` once) with one statement per table."""
        if not documents:
            return
        db = self.db
        existing = self._rows_of(record.id, [doc_id for doc_id, _ in documents])
        following = int(db.execute("SELECT coalesce(max(row), 0) FROM docs").fetchone()[0]) + 1
        inserted: list[tuple[int, int, str, str]] = []
        updated: list[tuple[str, int]] = []
        vectors: list[tuple[int, str, bytes]] = []
        values: list[tuple[str, Any, int]] = []
        for doc_id, source in documents:
            stored = dict(source)
            row = existing.get(doc_id)
            if row is None:
                row, following = following, following + 1
            for field in schema.vector_fields:
                value = schema.value(stored, field)
                if value is not None:
                    vectors.append((row, field.path, np.asarray(value, dtype=np.float32).tobytes()))
                    stored = without_path(stored, list(field.source_path))
            text = json.dumps(stored)
            if doc_id in existing:
                updated.append((text, row))
            else:
                inserted.append((row, record.id, doc_id, text))
            values.extend([(path, value, row) for path, value in field_values(schema, stored)])
        if updated:
            db.executemany("UPDATE docs SET source = ? WHERE row = ?", updated)
            for table in ("vectors", "fieldvals"):
                db.executemany(f"DELETE FROM {table} WHERE row = ?", [(row,) for _, row in updated])  # noqa: S608
        db.executemany("INSERT INTO docs (row, index_id, id, source) VALUES (?, ?, ?, ?)", inserted)
        db.executemany("INSERT INTO vectors (row, field, data) VALUES (?, ?, ?)", vectors)
        db.executemany("INSERT OR IGNORE INTO fieldvals (field, value, row) VALUES (?, ?, ?)", values)
        rows = [(record.id, row) for row, *_ in inserted] + [(record.id, row) for _, row in updated]
        db.executemany("INSERT INTO changes (index_id, row) VALUES (?, ?)", rows)

    def _rows_of(self, index_id: int, doc_ids: Sequence[str]) -> dict[str, int]:
        return dict(self._where_in("SELECT id, row FROM docs WHERE index_id = ? AND id IN ({})", doc_ids, index_id))

    def _where_in(self, query: str, values: Sequence[Any], *leading: Any) -> Iterator[Any]:
        """The rows ``query`` returns for ``values``, asked 500 at a time: its ``{}`` becomes their placeholders
        (never the values themselves), after the ``leading`` parameters."""
        for start in range(0, len(values), 500):
            chunk = values[start : start + 500]
            yield from self.db.execute(query.format(", ".join("?" * len(chunk))), (*leading, *chunk)).fetchall()

    def delete_document(self, record: IndexRecord, doc_id: str) -> bool:
        row = self.document_row(record.id, doc_id)
        if row is None:
            return False
        self._delete_dependents(record.id, row)
        self.db.execute("DELETE FROM docs WHERE row = ?", (row,))
        self.db.execute("INSERT INTO changes (index_id, row) VALUES (?, ?)", (record.id, row))
        return True

    def _delete_dependents(self, index_id: int, row: int) -> None:
        self.db.execute("DELETE FROM vectors WHERE row = ?", (row,))
        self.db.execute("DELETE FROM fieldvals WHERE row = ?", (row,))

    def hits(self, rows: Sequence[int]) -> dict[int, tuple[str, dict[str, Any]]]:
        """Row -> (``_id``, stored source without vectors)."""
        query = "SELECT row, id, source FROM docs WHERE row IN ({})"
        return {row: (doc_id, json.loads(source)) for row, doc_id, source in self._where_in(query, rows)}

    def vectors_of(self, rows: Sequence[int], field: Field) -> dict[int, list[float]]:
        query = "SELECT row, data FROM vectors WHERE field = ? AND length(data) > 0 AND row IN ({})"
        return {
            row: np.frombuffer(data, dtype=np.float32).tolist() for row, data in self._where_in(query, rows, field.path)
        }

    def vector_blobs(self, rows: Sequence[int], field: str) -> list[tuple[int, bytes]]:
        """(row, float32 bytes) of ``field`` for those of ``rows`` that have it, in row order."""
        query = VECTOR_BLOBS
        return list(self._where_in(query, rows, field))

    def count(self, index_id: int) -> int:
        return int(self.db.execute("SELECT count(*) FROM docs WHERE index_id = ?", (index_id,)).fetchone()[0])

    def size_bytes(self, index_id: int) -> int:
        docs = self.db.execute("SELECT coalesce(sum(length(source)), 0) FROM docs WHERE index_id = ?", (index_id,))
        vectors = self.db.execute(
            "SELECT coalesce(sum(length(data)), 0) FROM vectors WHERE row IN (SELECT row FROM docs WHERE index_id = ?)",
            (index_id,),
        )
        return int(docs.fetchone()[0]) + int(vectors.fetchone()[0])
