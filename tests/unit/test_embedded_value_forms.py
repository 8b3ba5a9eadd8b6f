"""A database whose filter values an earlier esbridge derived otherwise (a whole number's fraction kept, a float at
double precision, the JSON number 2024 read as milliseconds) has them derived again when it is opened."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, lexical_layout, value_forms
from esbridge.engines.embedded.store import DB_FILE
from esbridge.engines.embedded.tables import create_tables

MAPPING = {
    "n": {"type": "integer"},
    "h": {"type": "half_float"},
    "day": {"type": "date"},
    "k": {"type": "keyword"},
}
OLD_FORMS = {"n": 5.7, "h": 0.1, "day": 2024.0}
"""The values an esbridge before the fraction, precision and date changes stored for the document below."""


def _write_the_old_way(data: Path, names: list[str]) -> None:
    """The full-text index laid out as before (its first format, numbers as written), then the stored filter values
    put back to their old forms."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical_layout, "FORMAT", 1)
        patch.setattr(lexical_layout, "stored_number", lambda field, number: number, raising=False)
        engine = EmbeddedEngine(data)
        for name in names:
            engine.create_index(name, {"mappings": {"properties": MAPPING}})
            written = engine.bulk(name, [BulkAction("index", "old", {"n": 5.7, "h": 0.1, "day": 2024, "k": "a"})])
            assert not written.failed
            assert not engine.search(name, {"query": {"term": {"h": 0.0999755859375}}}).hits  # (0.1 kept as written)
        engine.close()
    db = sqlite3.connect(data / DB_FILE)
    with db:
        for field, value in OLD_FORMS.items():
            db.execute("UPDATE fieldvals SET value = ? WHERE field = ?", (value, field))
        db.execute("PRAGMA user_version = 0")
    db.close()


def _found(engine: EmbeddedEngine, name: str, query: dict[str, Any]) -> list[str]:
    # beside a range on a keyword, which only the SQL filters over the stored values answer
    body = {"query": {"bool": {"filter": [query, {"range": {"k": {"gte": "a"}}}]}}}
    return [hit.id for hit in engine.search(name, body).hits]


def _answers(engine: EmbeddedEngine, name: str) -> list[Any]:
    sorted_by = [engine.search(name, {"sort": [{f: "asc"}]}).raw["hits"]["hits"][0]["sort"] for f in OLD_FORMS]
    return [
        _found(engine, name, {"term": {"n": 5}}),
        _found(engine, name, {"term": {"h": 0.0999755859375}}),
        _found(engine, name, {"range": {"day": {"gte": "2024-01-01", "lt": "2025-01-01"}}}),
        sorted_by,
        # in the full-text index, which answers these alone
        [hit.id for hit in engine.search(name, {"query": {"term": {"h": 0.0999755859375}}}).hits],
        [hit.id for hit in engine.search(name, {"query": {"range": {"h": {"gte": 0.1}}}}).hits],
    ]


EXPECTED = [["old"], ["old"], ["old"], [[5.0], [0.0999755859375], [1704067200000.0]], ["old"], []]


def test_old_filter_values_are_derived_again_on_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write_the_old_way(tmp_path / "data", ["a"])
    with caplog.at_level(logging.WARNING, logger=value_forms.__name__):
        engine = EmbeddedEngine(tmp_path / "data")
    said = [record.getMessage() for record in caplog.records]
    assert said[0] == (
        "index [a]: checking the filter values of its 1 documents against how this esbridge derives them (day, h, n), "
        "once"
    )
    assert ": the filter values of 1 documents an earlier esbridge wrote were derived again (" in said[1]
    try:
        # Before: the old forms stayed until each document was written again: term 5 and the year 2024 missed the
        # document, gte 0.1 found it, and it sorted by 5.7, 0.1 and 2024.
        assert _answers(engine, "a") == EXPECTED
        assert {hit["_source"]["h"] for hit in engine.search("a", {}).raw["hits"]["hits"]} == {0.1}
    finally:
        engine.close()


def test_a_stop_part_way_is_taken_up_by_the_next_open_and_a_derived_database_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    _write_the_old_way(data, ["a", "b"])
    derive = value_forms.derive_again
    calls: list[str] = []

    def stopped_at_the_second(store: Any, record: Any, fields: list[str]) -> int:
        calls.append(record.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return derive(store, record, fields)

    monkeypatch.setattr(value_forms, "derive_again", stopped_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        EmbeddedEngine(data)
    monkeypatch.setattr(value_forms, "derive_again", derive)
    engine = EmbeddedEngine(data)
    try:
        assert _answers(engine, "a") == _answers(engine, "b") == EXPECTED
    finally:
        engine.close()

    def never(store: Any, record: Any, fields: list[str]) -> int:
        raise AssertionError(f"derived {record.name} again")

    monkeypatch.setattr(value_forms, "derive_again", never)
    engine = EmbeddedEngine(data)
    try:
        assert _answers(engine, "b") == EXPECTED
    finally:
        engine.close()


def test_each_batch_is_read_along_the_rows_without_sorting_the_index_again() -> None:
    # Through the (index_id, id) index, every batch sorted all of an index's documents: a million-document database
    # was still on its first hundreds of batches after 8 minutes.
    db = sqlite3.connect(":memory:")
    create_tables(db)
    plan = " ".join(str(step[-1]) for step in db.execute(f"EXPLAIN QUERY PLAN {value_forms.NEXT_BATCH}", (0, 1, 500)))
    assert "INTEGER PRIMARY KEY" in plan
    assert "TEMP B-TREE" not in plan
