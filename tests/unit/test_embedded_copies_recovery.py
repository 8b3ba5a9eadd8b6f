"""The float32 copies re-scoring reads stay complete across a killed writer: rows it committed before writing
their copies get them from the process that next holds the writer lock, even when that process first took
those rows into its graph as a reader; and copies deleted under their marker are filled in again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.floats import FloatCopies
from tests.support.embedded_index import (
    DIMENSION,
    ROWS,
    answers,
    at_small_scale,
    become_writer,
    complete,
    copies_of,
    finish,
    indexed,
    rows_and_vectors,
)

_KILLED_WRITER = """
import os, sys
import numpy as np
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, floats
floats.FloatCopies.write = lambda *args, **kwargs: None  # killed after the commit, before the copies
engine = EmbeddedEngine(sys.argv[1])
rows = np.random.default_rng(9).standard_normal((50, 8)).astype(np.float32)
actions = [BulkAction("index", f"late{i}", {"tag": "late", "v": v.tolist()}) for i, v in enumerate(rows)]
assert not engine.bulk("idx", actions).failed
os._exit(0)
"""


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    at_small_scale(monkeypatch)


def test_rows_a_killed_writer_left_without_copies_get_them_from_a_reader_that_later_writes(tmp_path: Path) -> None:
    indexed(tmp_path)
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], check=True, timeout=120)
    engine = EmbeddedEngine(tmp_path)
    try:
        rows, stored = rows_and_vectors(engine._store)
        assert len(rows) == ROWS + 50
        assert not copies_of_file(tmp_path).read(rows[-50:]).any(), "the killed writer wrote no copies"
        before = answers(engine)  # a reader: the graph takes the 50 rows in, and may not write their copies
        assert not engine._shared.writing
        assert any(doc.startswith("late") for hits in before for doc, _ in hits)
        become_writer(engine)
        next(iter(engine._shared._handles.values())).settle()
        np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
        assert answers(engine) == before
    finally:
        engine.close()
    engine = EmbeddedEngine(tmp_path)  # the graph saved at close holds the 50 rows; their copies are there too
    try:
        assert answers(engine) == before
        np.testing.assert_array_equal(copies_of_file(tmp_path).read(rows), stored)
    finally:
        engine.close()


def test_a_reader_turned_writer_that_closes_at_once_writes_the_copies_before_saving_the_graph(tmp_path: Path) -> None:
    indexed(tmp_path)
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], check=True, timeout=120)
    engine = EmbeddedEngine(tmp_path)
    try:
        answers(engine)
        engine._shared.hold_writer(
            engine._store
        )  # the lock, and no update after it: close saves what the reader took in
    finally:
        engine.close()
    store_engine = EmbeddedEngine(tmp_path)
    try:
        rows, stored = rows_and_vectors(store_engine._store)
        np.testing.assert_array_equal(copies_of_file(tmp_path).read(rows), stored)
    finally:
        store_engine.close()


def test_copies_deleted_under_their_marker_are_filled_in_by_the_next_writer(tmp_path: Path) -> None:
    indexed(tmp_path)
    assert complete(tmp_path)
    for path in (tmp_path / "vectors").glob("*.f32"):
        path.unlink()
    engine = EmbeddedEngine(tmp_path)
    try:
        before = answers(engine)
        become_writer(engine)
        finish(engine)
        assert complete(tmp_path)
        rows, stored = rows_and_vectors(engine._store)
        np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
        assert answers(engine) == before
    finally:
        engine.close()


def copies_of_file(root: Path) -> FloatCopies:
    found = list((root / "vectors").glob("*.usearch"))
    assert len(found) == 1
    return FloatCopies(found[0].with_suffix(".f32"), DIMENSION)
