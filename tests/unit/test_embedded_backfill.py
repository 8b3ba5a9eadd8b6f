"""The writer fills in the float32 copies a data directory made before them lacks: once, in the background,
without changing an answer, safe beside writes, stopped by close and finished by the next writer."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann, backfill, database_file
from esbridge.engines.embedded.floats import FloatCopies
from esbridge.engines.embedded.store import DB_FILE, Store
from esbridge.errors import EngineUnavailable
from tests.support.embedded_index import (
    DIMENSION,
    MAPPING,
    QUERIES,
    ROWS,
    answers,
    at_small_scale,
    become_writer,
    complete,
    copies_of,
    finish,
    indexed,
    rows_and_vectors,
    vectors,
)


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    at_small_scale(monkeypatch)


def older_directory(root: Path) -> None:
    """An index of ROWS vectors as the previous release left it: graph and database, no copies, no marker."""
    indexed(root, per_request=100)
    for path in (root / "vectors").glob("*.f32*"):
        path.unlink()


def counting_pages(monkeypatch: pytest.MonkeyPatch, then: Callable[[int], None] | None = None) -> list[int]:
    """Count (and optionally follow with ``then``) each page the back-fill writes."""
    pages: list[int] = []
    original = backfill._copy_page

    def counted(db: Any, copies: FloatCopies, path: str, rows: Sequence[int]) -> None:
        original(db, copies, path, rows)
        pages.append(len(rows))
        if then is not None:
            then(len(pages))

    monkeypatch.setattr(backfill, "_copy_page", counted)
    return pages


def test_the_first_writer_fills_in_an_older_directorys_copies_and_searches_then_skip_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older_directory(tmp_path)
    pages = counting_pages(monkeypatch)
    engine = EmbeddedEngine(tmp_path)
    try:
        before = answers(engine)  # a process that only searches takes no writer lock: nothing back-filled
        assert (pages, complete(tmp_path)) == ([], False)
        become_writer(engine)
        finish(engine)
        assert complete(tmp_path)
        assert sum(pages) == ROWS + 1
        rows, stored = rows_and_vectors(engine._store)
        assert len(rows) == ROWS
        np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
        next(iter(engine._shared._handles.values())).settle()
        reads: list[int] = []
        original = Store.vector_blobs

        def counted(self: Store, rows: Sequence[int], field: str) -> list[tuple[int, bytes]]:
            reads.append(len(rows))
            return original(self, rows, field)

        monkeypatch.setattr(Store, "vector_blobs", counted)
        assert answers(engine) == before
        assert reads == [], "re-scored from the copies, not the database"
    finally:
        engine.close()


def test_a_completed_back_fill_is_not_redone_and_a_new_index_needs_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = counting_pages(monkeypatch)
    engine = EmbeddedEngine(tmp_path)
    engine.create_index("idx", MAPPING)
    assert complete(tmp_path), "marked at creation: the writer writes every copy from the first row"
    actions = [BulkAction("index", f"d{i}", {"v": v.tolist()}) for i, v in enumerate(vectors(ROWS))]
    assert not engine.bulk("idx", actions).failed
    finish(engine)
    assert pages == []
    rows, stored = rows_and_vectors(engine._store)
    np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
    engine.close()
    older_directory(tmp_path / "older")
    for root in (tmp_path, tmp_path / "older"):
        engine = EmbeddedEngine(root)
        try:
            become_writer(engine)
            finish(engine)
        finally:
            engine.close()
    assert sum(pages) == ROWS + 1, "only the older directory's copies are filled in"
    engine = EmbeddedEngine(tmp_path / "older")
    try:
        become_writer(engine)
        assert not engine._shared._backfills._running
    finally:
        engine.close()
    assert sum(pages) == ROWS + 1


def test_a_new_index_is_not_back_filled_when_its_first_copies_are_still_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = counting_pages(monkeypatch)
    engine = EmbeddedEngine(tmp_path)
    try:
        engine.create_index("idx", MAPPING)
        busy = threading.Event()
        engine._shared._workers.submit(busy.wait, 60)  # the graph worker, which writes the copies, is busy
        actions = [BulkAction("index", f"d{i}", {"v": v.tolist()}) for i, v in enumerate(vectors(ROWS))]
        assert not engine.bulk("idx", actions).failed
        busy.set()
        finish(engine)
        assert pages == []
        assert len(answers(engine)[0]) == 10
    finally:
        engine.close()


def test_closing_mid_way_leaves_an_index_that_answers_and_the_next_writer_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older_directory(tmp_path)
    midway = threading.Event()
    engine = EmbeddedEngine(tmp_path)

    def hold(count: int) -> None:
        if count == 3:  # keep the back-fill under way until close asks it to stop
            midway.set()
            deadline = time.monotonic() + 10
            while not engine._shared._backfills._closed and time.monotonic() < deadline:
                time.sleep(0.01)

    pages = counting_pages(monkeypatch, hold)
    before = answers(engine)
    become_writer(engine)
    assert midway.wait(10)
    assert answers(engine) == before, "searches during the back-fill"
    rows, stored = rows_and_vectors(engine._store)
    engine.close()
    assert len(pages) == 3
    assert not complete(tmp_path)
    assert not engine._shared._backfills._running
    partial = FloatCopies(next((tmp_path / "vectors").glob("*.f32")), DIMENSION).read(rows)
    np.testing.assert_array_equal(partial[: 3 * 16], stored[: 3 * 16])
    assert not partial[3 * 16 :].any()
    monkeypatch.undo()
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)
    monkeypatch.setattr(backfill, "PAGE", 16)
    engine = EmbeddedEngine(tmp_path)
    try:
        assert answers(engine) == before
        become_writer(engine)
        finish(engine)
        assert complete(tmp_path)
        np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
        assert answers(engine) == before
    finally:
        engine.close()


def test_writes_during_a_back_fill_leave_every_copy_equal_to_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older_directory(tmp_path)
    pages = counting_pages(monkeypatch)
    permits = threading.Semaphore(0)
    monkeypatch.setattr(backfill, "threading", _PagedThreading(permits))
    engine = EmbeddedEngine(tmp_path)
    try:
        become_writer(engine)
        changed = vectors(ROWS, seed=5)
        seen = []
        for start in range(0, ROWS, 30):  # each row once, new vectors, one page of the back-fill after each
            batch = [BulkAction("index", f"d{i}", {"v": changed[i].tolist()}) for i in range(start, start + 20)]
            batch += [BulkAction("delete", f"d{i}") for i in range(start + 20, start + 25)]
            assert not engine.bulk("idx", batch).failed
            seen.append(len(pages))
            permits.release()
            deadline = time.monotonic() + 10
            while len(pages) == seen[-1] and time.monotonic() < deadline:
                time.sleep(0.005)
        assert seen == list(range(10)), "each write landed between two pages of the back-fill"
        permits.release(1_000)
        finish(engine)
        next(iter(engine._shared._handles.values())).settle()
        rows, stored = rows_and_vectors(engine._store)
        np.testing.assert_array_equal(copies_of(engine).read(rows), stored)
        kept = [i for i in range(ROWS) if i % 30 < 20 or i % 30 >= 25]
        current = {f"d{i}": (changed[i] if i % 30 < 20 else vectors(ROWS)[i]) for i in kept}
        for query, hits in zip(QUERIES, answers(engine), strict=True):
            unit = query / np.linalg.norm(query)
            for doc, score in hits:
                vector = current[doc]
                assert score == pytest.approx((1 + float(vector @ unit / np.linalg.norm(vector))) / 2, abs=1e-6)
    finally:
        engine.close()


def test_a_failed_back_fill_is_logged_naming_the_index_and_searches_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    older_directory(tmp_path)

    def broken(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(backfill, "_copy_page", broken)
    engine = EmbeddedEngine(tmp_path)
    try:
        before = answers(engine)
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            become_writer(engine)
            finish(engine)
        assert "index [idx] field [v] were not back-filled" in caplog.text
        assert "No space left on device" in caplog.text
        assert not complete(tmp_path)
        assert answers(engine) == before
    finally:
        engine.close()


class _PagedThreading:
    """``threading`` for the back-fill, whose stop event lets it write a page only when the test allows one."""

    Lock = threading.Lock
    Thread = threading.Thread

    def __init__(self, permits: threading.Semaphore) -> None:
        class Event(threading.Event):
            def is_set(self) -> bool:
                if not super().is_set():
                    permits.acquire(timeout=10)
                return super().is_set()

            def set(self) -> None:
                super().set()
                permits.release()

        self.Event = Event


_HOLDER = """
import sys
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine._shared.hold_writer(engine._store)
print("holding", flush=True)
sys.stdin.readline()
engine.close()
"""


def test_a_process_without_the_writer_lock_does_not_back_fill(tmp_path: Path) -> None:
    older_directory(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    reader = EmbeddedEngine(tmp_path)
    try:
        assert holder.stdout.readline().strip() == "holding"
        assert len(answers(reader)[0]) == 10
        with pytest.raises(EngineUnavailable, match="written by another process"):
            become_writer(reader)
        assert not reader._shared._backfills._running
        assert not list((tmp_path / "vectors").glob("*.f32*"))
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
        reader.close()


def _vector_files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((root / "vectors").iterdir()) if path.is_file()}


@pytest.mark.parametrize(
    ("change", "when"), [("removed", "between pages"), ("replaced", "between pages"), ("replaced", "at its start")]
)
def test_a_back_fill_stops_once_its_database_is_gone_or_replaced_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, change: str, when: str
) -> None:
    # It read on from the removed file, or opened the copy, and wrote copies and their marker for a database that
    # no longer stood there: the copy then passed for complete with another database's vectors.
    older_directory(tmp_path)
    database = tmp_path / DB_FILE
    found: dict[str, bytes] = {}
    written = threading.Event()

    def change_it() -> None:
        written.wait(30)  # (after the write returns: it commits its full-text changes only beside its database)
        if change == "removed":
            for suffix in ("", "-wal", "-shm"):
                database.with_name(DB_FILE + suffix).unlink(missing_ok=True)
        else:  # a backup of the database restored in its place
            shutil.copyfile(database, tmp_path / "backup")
            os.replace(tmp_path / "backup", database)
        found.update(_vector_files(tmp_path))

    if when == "at its start":
        opening = database_file.open_existing

        def changed_first(path: Path) -> sqlite3.Connection:
            change_it()
            return opening(path)

        monkeypatch.setattr(backfill, "open_existing", changed_first)
    pages = counting_pages(monkeypatch, lambda count: change_it() if when == "between pages" and count == 1 else None)
    engine = EmbeddedEngine(tmp_path)
    try:
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            become_writer(engine)
            written.set()
            finish(engine)
        assert _vector_files(tmp_path) == found, "nothing written since"
        assert not complete(tmp_path)
        assert len(pages) == (1 if when == "between pages" else 0)
        problem = "is gone" if change == "removed" else "is not the file this process opened"
        assert f"index [idx] field [v] were not back-filled: the database {database} {problem}" in caplog.text
    finally:
        engine.close()
