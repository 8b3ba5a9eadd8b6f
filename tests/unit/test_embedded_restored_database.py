"""The embedded database replaced by a copy (a backup restored) while a process has it open, or between two runs:
reads on the connections opened before are refused as writes are, an engine opened on the copy has the copy's
structures and writer lock to itself, a catch-up under way writes nothing of the old database beside the copy, and
full-text indices and graphs that record changes the database lacks are built again from it."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, catch_up, lexical
from esbridge.engines.embedded.store import DB_FILE
from esbridge.engines.embedded.writer import WriterBusy, WriterLock
from tests.support.restored_data import (
    NOT_OPENED,
    TEXT,
    VECTOR,
    backup_database,
    hits,
    kestrel,
    opened,
    put_database,
    restore_a_copy,
)

_HERON = [BulkAction("index", "b", {"body": "heron"})]
_PLOVER = [BulkAction("index", "c", {"body": "plover"})]


@pytest.mark.parametrize("change", ["replaced", "gone"])
def test_reads_through_connections_opened_before_are_refused_naming_the_database(tmp_path: Path, change: str) -> None:
    # A search on a thread whose connection was opened before went on answering from the removed file (here: the
    # document written after the backup), with no sign of it, while writes and other threads were refused.
    data = tmp_path / "data"
    with kestrel(data) as engine:
        backup_database(data, tmp_path / "backup.sqlite3")
        assert not engine.bulk("idx", _HERON).failed
        assert hits(engine, "heron") == ["b"]
        if change == "replaced":
            put_database(tmp_path / "backup.sqlite3", data)
            said = NOT_OPENED.format(data / DB_FILE)
        else:
            for suffix in ("", "-wal", "-shm"):
                (data / (DB_FILE + suffix)).unlink(missing_ok=True)
            said = f"the database {data / DB_FILE} is gone"
        reads: list[Callable[[], object]] = [
            lambda: engine.search("idx", {"query": {"match": {"body": "heron"}}}),
            lambda: engine.count("idx"),
            lambda: engine.index_exists("idx"),
            lambda: engine.get_mapping("idx"),
        ]
        for read in reads:
            with pytest.raises(errors.EngineResponseError) as refused:
                read()
            assert f"cannot read: {said}" in str(refused.value)


def test_an_engine_opened_on_a_restored_directory_has_its_writer_lock_to_itself(tmp_path: Path) -> None:
    # It shared the first engine's structures and writer lock, held on the directory the restore moved away: it wrote
    # without locking the restored one, so another process could write there beside it.
    data = tmp_path / "data"
    with kestrel(data) as first:
        restore_a_copy(data, "directory")
        with pytest.raises(errors.EngineResponseError, match=NOT_OPENED.format(data / DB_FILE)):
            first.bulk("idx", _HERON)
        second = EmbeddedEngine(data)
        try:
            assert not second.bulk("idx", _HERON).failed
            assert hits(second, "heron") == ["b"]
            assert hits(second, "kestrel") == ["a"]
            with pytest.raises(WriterBusy):
                WriterLock(data).take()  # (another process, as flock sees it: another open file)
        finally:
            second.close()


def test_an_engine_opened_after_the_database_alone_was_restored_indexes_its_writes(tmp_path: Path) -> None:
    # It took the first engine's full-text state for the copy's: that state counted the changes written after the
    # backup, so the copy's next writes, numbered alike, were taken for indexed and never found by a search.
    data = tmp_path / "data"
    with kestrel(data) as first:
        backup_database(data, tmp_path / "backup.sqlite3")
        assert not first.bulk("idx", _HERON).failed
        put_database(tmp_path / "backup.sqlite3", data)
        second = EmbeddedEngine(data)
        try:
            assert not second.bulk("idx", _PLOVER).failed
            assert (hits(second, "plover"), hits(second, "heron")) == (["c"], [])
        finally:
            second.close()
    _assert_the_copy_answers(data)


def _assert_the_copy_answers(data: Path) -> None:
    """A process opened on ``data`` finds what the restored copy holds and what was written to it, nothing else."""
    engine = EmbeddedEngine(data)
    try:
        if not hits(engine, "plover"):
            assert not engine.bulk("idx", _PLOVER).failed
        assert (hits(engine, "kestrel"), hits(engine, "heron"), hits(engine, "plover")) == (["a"], [], ["c"])
    finally:
        engine.close()


def test_structures_that_record_changes_the_database_lacks_are_built_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A database restored alone between two runs, beside the full-text index and graph of a later time: they
    # recorded changes past the database's last, so they answered rows the database no longer had and took its next
    # writes, numbered as those, for applied: a document written then was never found.
    data = tmp_path / "data"
    with opened(data, {**TEXT, **VECTOR}, ("a", {"body": "kestrel", "vec": [1, 0]})) as engine:
        backup_database(data, tmp_path / "backup.sqlite3")
        later = [BulkAction("index", f"b{i}", {"body": "heron", "vec": [0, 1]}) for i in range(5)]
        assert not engine.bulk("idx", later).failed
    put_database(tmp_path / "backup.sqlite3", data)
    engine = EmbeddedEngine(data)
    try:
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            assert hits(engine, "heron") == []
            assert not engine.bulk("idx", _PLOVER).failed
            assert hits(engine, "plover") == ["c"]
            nearest = engine.search("idx", {"query": {"knn": {"vec": {"vector": [0, 1], "k": 1}}}}).hits
            assert [hit.id for hit in nearest] == ["a"]
        assert "this database's change log" in caplog.text
    finally:
        engine.close()


def test_a_catch_up_under_way_when_a_copy_is_restored_records_nothing_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full-text index built whole from the database (on the build thread, page by page) when the database was
    # replaced by a backup went on reading the removed file and committed it beside the copy, then recorded itself
    # complete: the copy's later writes, numbered as the removed file's changes, were taken for indexed.
    data = tmp_path / "data"
    with kestrel(data) as engine:
        backup_database(data, tmp_path / "backup.sqlite3")
        assert not engine.bulk("idx", [BulkAction("index", f"b{i}", {"body": "heron"}) for i in range(6)]).failed
    shutil.rmtree(data / "lexical")  # (the full-text index is built whole by the next search)
    monkeypatch.setattr(catch_up, "BATCH", 2)
    monkeypatch.setattr(lexical, "COMMIT_AFTER_S", 0.0)  # (each page commits)
    pages: list[int] = []
    apply = lexical.LexicalIndex.apply

    def restored_after_a_page(text: lexical.LexicalIndex, *args: Any, **options: Any) -> None:
        apply(text, *args, **options)
        pages.append(1)
        if len(pages) == 1:
            put_database(tmp_path / "backup.sqlite3", data)

    monkeypatch.setattr(lexical.LexicalIndex, "apply", restored_after_a_page)
    engine = EmbeddedEngine(data)
    try:
        with pytest.raises(errors.EngineResponseError, match=NOT_OPENED.format(data / DB_FILE)):
            hits(engine, "heron")
    finally:
        engine.close()
    monkeypatch.undo()
    assert not list((data / "lexical").glob("*/state.json")), "the build is not recorded complete"
    _assert_the_copy_answers(data)


@pytest.mark.parametrize("log", ["trimmed at close", "whole"])
def test_a_database_from_another_data_directory_answers_with_its_own_documents(tmp_path: Path, log: str) -> None:
    # This directory's full-text index and graph recorded change 3; the other database's log numbered ten. Trimmed
    # at close, it held none they could catch up with; whole, they took changes 4 to 10. Either way they kept this
    # directory's first three rows and answered them under the other database's ids.
    for name, word, vector in (("here", "kestrel", [1, 0]), ("there", "heron", [0, 1])):
        with opened(tmp_path / name, {**TEXT, **VECTOR}) as engine:
            for i in range(3 if name == "here" else 10):  # (a write each: the log numbers ten changes there)
                assert not engine.bulk("idx", [BulkAction("index", f"{name}{i}", {"body": word, "vec": vector})]).failed
            if name == "there" and log == "whole":
                backup_database(tmp_path / "there", tmp_path / "there.sqlite3")
    if log != "whole":
        backup_database(tmp_path / "there", tmp_path / "there.sqlite3")
    put_database(tmp_path / "there.sqlite3", tmp_path / "here")
    engine = EmbeddedEngine(tmp_path / "here")
    try:
        assert hits(engine, "kestrel") == []
        assert sorted(hits(engine, "heron")) == [f"there{i}" for i in range(10)]
        nearest = engine.search("idx", {"query": {"knn": {"vec": {"vector": [1, 0], "k": 20}}}, "size": 20}).hits
        assert sorted(hit.id for hit in nearest) == [f"there{i}" for i in range(10)]
        assert {round(hit.score, 3) for hit in nearest} == {0.5}  # (cosine 0: every vector there is [0, 1])
    finally:
        engine.close()
