"""A data directory made by the first embedded engine, which searched text with SQLite FTS5 tables in the database
(``fts_en_<index id>``, ``fts_ex_<index id>``) and had no ``lexical/`` or ``vectors/``. It opens as it is, and its
FTS5 tables go: nothing reads them since tantivy replaced them, and they held a copy of every document's text as
it was then, which deleting the document, or its index, left in the file."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.store import DB_FILE

_VECTOR = {"type": "knn_vector", "dimension": 2, "method": {"name": "hnsw", "space_type": "cosinesimil"}}
_BODY = {
    "settings": {"index": {"knn": True}},
    "mappings": {"properties": {"title": {"type": "text", "analyzer": "english"}, "v": _VECTOR}},
}
_SECRET = "pension statement for Ada Lovelace"


def _fts5_tables(root: Path) -> list[str]:
    with sqlite3.connect(root / DB_FILE) as db:
        found = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'fts%'")]
    db.close()
    return found


def _made_by_the_fts5_engine(root: Path) -> None:
    """Documents d0-d2 in index ``notes`` (id 1), each also in the FTS5 tables as that engine kept them."""
    engine = EmbeddedEngine(root)
    engine.create_index("notes", _BODY)
    texts = [_SECRET, "solar panel angle", "battery sizing"]
    actions = [BulkAction("index", f"d{i}", {"title": text, "v": [1.0, float(i)]}) for i, text in enumerate(texts)]
    assert not engine.bulk("notes", actions).failed
    engine.close()
    shutil.rmtree(root / "lexical")
    shutil.rmtree(root / "vectors")
    with sqlite3.connect(root / DB_FILE) as db:
        db.execute('CREATE VIRTUAL TABLE fts_en_1 USING fts5(c0, tokenize="porter unicode61")')
        db.execute("CREATE VIRTUAL TABLE fts_ex_1 USING fts5(c0, tokenize=\"unicode61 tokenchars '._'\")")
        for row, text in enumerate(texts, start=1):
            db.execute("INSERT INTO fts_en_1 (rowid, c0) VALUES (?, ?)", (row, text))
            db.execute("INSERT INTO fts_ex_1 (rowid, c0) VALUES (?, ?)", (row, text))
    db.close()
    assert "fts_en_1_content" in _fts5_tables(root)


def test_a_directory_of_the_fts5_engine_opens_and_its_fts5_tables_are_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _made_by_the_fts5_engine(tmp_path)
    caplog.set_level(logging.INFO, logger="esbridge")
    engine = EmbeddedEngine(tmp_path)
    try:
        assert engine.count("notes") == 3
        hits = engine.search("notes", {"query": {"match": {"title": "panels"}}}).hits
        assert [hit.id for hit in hits] == ["d1"]
        knn = {"size": 3, "query": {"knn": {"v": {"vector": [1.0, 0.0], "k": 3}}}}
        assert [hit.id for hit in engine.search("notes", knn).hits] == ["d0", "d1", "d2"]
        assert not engine.bulk("notes", [BulkAction("delete", "d0")]).failed
    finally:
        engine.close()
    assert _fts5_tables(tmp_path) == []
    assert any("FTS5" in record.getMessage() and str(tmp_path) in record.getMessage() for record in caplog.records)
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):  # noqa: S608  (names read from the schema)
                assert not any(isinstance(value, str) and "Lovelace" in value for value in row), table
    db.close()


def test_a_process_that_opens_it_after_the_tables_went_finds_nothing_to_drop(tmp_path: Path) -> None:
    _made_by_the_fts5_engine(tmp_path)
    first, second = EmbeddedEngine(tmp_path), EmbeddedEngine(tmp_path)
    try:
        assert second.count("notes") == first.count("notes") == 3
    finally:
        first.close()
        second.close()
    assert _fts5_tables(tmp_path) == []
