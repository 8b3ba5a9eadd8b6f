"""An empty vector an older version stored (it took ``[]`` for a vector; a write refuses it now) is no vector:
the document answers BM25 and every other document kNN, where each kNN search failed with usearch's bare
AssertionError."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.store import DB_FILE

_VECTOR = {"type": "knn_vector", "dimension": 3, "method": {"name": "hnsw", "space_type": "cosinesimil"}}
_KNN = {"size": 10, "_source": False, "query": {"knn": {"v": {"vector": [1.0, 1.0, 1.0], "k": 10}}}}


def _written_by_an_older_version(root: Path, *, keep_copies: bool) -> None:
    """d0-d4 with vectors and ``empty`` with an empty one, as an older version left them: its graph never took
    ``empty`` in (the update failed), so no graph file was saved after it; with ``keep_copies`` the float32
    copies of a version from before the marker of complete copies are left for the writer to fill in."""
    engine = EmbeddedEngine(root)
    engine.create_index("idx", {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"v": _VECTOR}}})
    actions = [BulkAction("index", f"d{i}", {"body": "word", "v": [1.0, float(i), 0.5]}) for i in range(5)]
    assert not engine.bulk("idx", [*actions, BulkAction("index", "empty", {"body": "word"})]).failed
    engine.close()
    with sqlite3.connect(root / DB_FILE) as db:
        db.execute("INSERT INTO vectors (row, field, data) SELECT row, 'v', x'' FROM docs WHERE id = 'empty'")
    db.close()
    if keep_copies:
        for path in (root / "vectors").glob("*.complete"):
            path.unlink()
    else:
        shutil.rmtree(root / "vectors")


@pytest.mark.parametrize("keep_copies", [False, True])
def test_a_stored_empty_vector_is_no_vector(
    tmp_path: Path, keep_copies: bool, caplog: pytest.LogCaptureFixture
) -> None:
    _written_by_an_older_version(tmp_path, keep_copies=keep_copies)
    caplog.set_level(logging.WARNING)
    engine = EmbeddedEngine(tmp_path)
    try:
        assert sorted(hit.id for hit in engine.search("idx", _KNN).hits) == [f"d{i}" for i in range(5)]
        assert not engine.bulk("idx", [BulkAction("index", "d9", {"v": [1.0, 9.0, 0.5]})]).failed
        assert "d9" in {hit.id for hit in engine.search("idx", _KNN).hits}
    finally:
        engine.close()
    assert not caplog.records  # (the float32 copies were filled in, not given up)
    assert list((tmp_path / "vectors").glob("*.complete"))
    engine = EmbeddedEngine(tmp_path)
    try:
        assert sorted(hit.id for hit in engine.search("idx", _KNN).hits) == ["d0", "d1", "d2", "d3", "d4", "d9"]
    finally:
        engine.close()


def test_a_stored_empty_vector_is_left_out_of_the_source_and_of_a_copy(tmp_path: Path) -> None:
    # Read back as [], it was shown in hits and exports, matched exists, and failed a reindex as a vector of
    # dimension 0.
    _written_by_an_older_version(tmp_path, keep_copies=False)
    engine = EmbeddedEngine(tmp_path)
    try:
        engine.create_index("copy", {"settings": {"index": {"knn": True}}, "mappings": engine.get_mapping("idx")})
        assert engine.reindex("idx", "copy") == 6
        for index in ("idx", "copy"):
            hits = engine.search(index, {"size": 10, "query": {"ids": {"values": ["empty", "d1"]}}}).hits
            assert {hit.id: "v" in hit.source for hit in hits} == {"empty": False, "d1": True}
            with_vector = engine.search(index, {"size": 10, "query": {"exists": {"field": "v"}}}).hits
            assert "empty" not in {hit.id for hit in with_vector}
    finally:
        engine.close()
