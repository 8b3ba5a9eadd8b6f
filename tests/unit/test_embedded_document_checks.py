"""What the embedded engine refuses item by item, keeping the rest of the bulk request: ids a cluster refuses,
strings that are not UTF-8 text (an unpaired surrogate, as a string cut inside an emoji leaves), which tantivy and
SQLite cannot take, and documents nested deeper than Python's JSON can reliably store and read back; and such a
string stored before it was refused."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.shapes import MAX_DEPTH

PROPERTIES = {
    "body": {"type": "text"},
    "tag": {"type": "keyword"},
    "path": {"type": "keyword", "fields": {"t": {"type": "text"}}},
}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path)
    engine.create_index("idx", {"mappings": {"properties": PROPERTIES}})
    yield engine
    engine.close()


def _found(engine: EmbeddedEngine, text: str) -> list[str]:
    return sorted(hit.id for hit in engine.search("idx", {"size": 50, "query": {"match": {"body": text}}}).hits)


@pytest.mark.parametrize(
    "document",
    [
        {"body": "an emoji cut \ud83d here"},
        {"body": ["fine", "cut \udca9"]},
        {"tag": "\ud800"},
        {"path": "notes/\udcff.md"},
    ],
)
def test_a_string_that_is_not_utf8_text_is_refused_alone(engine: EmbeddedEngine, document: dict[str, Any]) -> None:
    actions = [
        BulkAction("index", "before", {"body": "common first"}),
        BulkAction("index", "cut", {"body": "common", **document}),
        BulkAction("index", "after", {"body": "common last"}),
    ]
    result = engine.bulk("idx", actions)
    assert sorted(result.succeeded) == ["after", "before"]
    ((failure),) = result.failed
    assert (failure.id, failure.status) == ("cut", 400)
    assert "surrogate" in failure.reason
    assert _found(engine, "common") == ["after", "before"]
    assert not engine.bulk("idx", [BulkAction("index", "later", {"body": "common later"})]).failed
    assert _found(engine, "common") == ["after", "before", "later"]


def test_an_update_that_would_hold_such_a_string_is_refused(engine: EmbeddedEngine) -> None:
    assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "common"})]).failed
    result = engine.bulk("idx", [BulkAction("update", "a", {"body": "cut \ud83d"})])
    assert [(failure.id, failure.status) for failure in result.failed] == [("a", 400)]
    assert _found(engine, "common") == ["a"]


@pytest.mark.parametrize(
    ("doc_id", "reason"),
    [("", "must not be empty"), ("x" * 513, "too long"), ("é" * 257, "too long"), ("cut\ud83d", "surrogate")],
)
def test_ids_a_cluster_refuses_are_refused_alone(engine: EmbeddedEngine, doc_id: str, reason: str) -> None:
    for op, document in (("index", {"body": "common"}), ("update", {"body": "x"}), ("delete", None)):
        actions = [BulkAction(op, doc_id, document), BulkAction("index", "kept", {"body": "common"})]  # type: ignore[arg-type]
        result = engine.bulk("idx", actions)
        assert list(result.succeeded) == ["kept"], op
        ((failure),) = result.failed
        assert (failure.id, failure.status) == (doc_id, 400), op
        assert reason in failure.reason, op
    assert engine.count("idx") == 1
    assert not engine.bulk("idx", [BulkAction("index", "y" * 512, {"body": "common"})]).failed
    assert engine.count("idx") == 2


def test_a_field_written_as_a_dotted_name_is_refused_rather_than_left_unindexed(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    try:
        properties = {"o": {"properties": {"x": {"type": "keyword"}, "in": {"properties": {"z": {"type": "integer"}}}}}}
        engine.create_index("objects", {"mappings": {"properties": properties}})
        actions = [
            BulkAction("index", "dotted", {"o.x": "dot"}),
            BulkAction("index", "inner-dotted", {"o": {"in.z": 9}}),
            BulkAction("index", "nested", {"o": {"x": "dot", "in": {"z": 9}}}),
        ]
        result = engine.bulk("objects", actions)
        assert list(result.succeeded) == ["nested"]
        reasons = {failure.id: failure.reason for failure in result.failed}
        assert sorted(reasons) == ["dotted", "inner-dotted"]
        assert "[o.x]" in reasons["dotted"] and "[o.in.z]" in reasons["inner-dotted"]

        def found(query: dict[str, Any]) -> list[str]:
            return [hit.id for hit in engine.search("objects", {"query": query}).hits]

        assert found({"term": {"o.x": "dot"}}) == ["nested"]
        assert found({"term": {"o.in.z": 9}}) == ["nested"]
    finally:
        engine.close()


def test_a_mapping_update_over_values_written_before_it_leaves_those_it_cannot_read_unindexed(
    engine: EmbeddedEngine,
) -> None:
    written: dict[str, dict[str, Any]] = {
        "fits": {"body": "common", "extra": 7, "when": "2024-05-01"},
        "not": {"extra": "hello", "when": "soon"},
    }
    assert not engine.bulk("idx", [BulkAction("index", key, document) for key, document in written.items()]).failed
    engine.put_mapping("idx", {"extra": {"type": "integer"}, "when": {"type": "date"}})  # as a cluster takes it

    def found(query: dict[str, Any]) -> list[str]:
        return sorted(hit.id for hit in engine.search("idx", {"size": 10, "query": query}).hits)

    assert found({"range": {"extra": {"gte": 1}}}) == ["fits"]
    assert found({"range": {"when": {"gte": "2024"}}}) == ["fits"]
    assert found({"match": {"body": "common"}}) == ["fits"]
    assert not engine.bulk("idx", [BulkAction("index", "later", {"body": "common", "extra": 9})]).failed
    assert found({"range": {"extra": {"gte": 1}}}) == ["fits", "later"]


def _nested(levels: int) -> dict[str, Any]:
    """An object ``levels`` objects deep (itself included)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"inner": value}
    return value


@pytest.mark.parametrize("levels", [MAX_DEPTH, 5000])
@pytest.mark.parametrize("op", ["index", "update"])
def test_a_document_nested_too_deep_is_refused_alone_naming_its_field(
    tmp_path: Path, levels: int, op: Literal["index", "update"]
) -> None:
    engine = EmbeddedEngine(tmp_path)
    engine.create_index(
        "idx", {"mappings": {"properties": {"body": {"type": "text"}, "meta": {"type": "object", "enabled": False}}}}
    )
    engine.bulk("idx", [BulkAction("index", "deep", {"body": "common"})])
    actions = [
        BulkAction(op, "deep", {"body": "common deep", "meta": _nested(levels)}),  # (the document is level 1)
        BulkAction("index", "after", {"body": "common after", "meta": [_nested(MAX_DEPTH - 2)]}),
    ]
    result = engine.bulk("idx", actions)
    assert list(result.succeeded) == ["after"]
    assert [(failure.id, failure.status) for failure in result.failed] == [("deep", 400)]
    assert f"nesting depth ({MAX_DEPTH + 1}) in field [meta] exceeds the maximum allowed" in result.failed[0].reason
    assert _found(engine, "common") == ["after", "deep"]
    assert _found(engine, "deep") == []
    engine.close()


def test_a_stored_string_that_is_not_utf8_text_leaves_that_document_out_of_full_text_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As an index written before such strings were refused holds them: its full-text index, built again, takes the
    rest, and says which document it left out."""
    engine = EmbeddedEngine(tmp_path)
    engine.create_index("idx", {"mappings": {"properties": PROPERTIES}})
    engine.bulk("idx", [BulkAction("index", key, {"body": f"common {key}"}) for key in ("a", "cut", "b")])
    engine.close()
    with sqlite3.connect(tmp_path / "esbridge.sqlite3") as db:
        db.execute("UPDATE docs SET source = ? WHERE id = 'cut'", (json.dumps({"body": "common cut \ud83d"}),))
    db.close()
    shutil.rmtree(tmp_path / "lexical")
    engine = EmbeddedEngine(tmp_path)
    assert _found(engine, "common") == ["a", "b"]
    assert "document 'cut' is left out of the full-text index" in caplog.text
    assert not engine.bulk("idx", [BulkAction("index", "cut", {"body": "common cut again"})]).failed
    assert _found(engine, "common") == ["a", "b", "cut"]
    engine.close()
