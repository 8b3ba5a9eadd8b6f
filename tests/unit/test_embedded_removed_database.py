"""The embedded database file removed while an engine has it open: a thread that opens its own connection then
is refused, naming the file, and no new empty database takes the old one's place."""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, datadir, lexical
from esbridge.engines.embedded.store import DB_FILE, IndexRecord
from tests.support.restored_data import (
    NOT_OPENED,
    TEXT,
    VECTOR,
    files,
    kestrel,
    opened,
    restore_a_copy,
    saved,
    search_on_a_new_thread,
    segments,
)

_NEAREST = {"query": {"knn": {"vec": {"vector": [1, 0], "k": 1}}}}


def test_a_removed_database_is_named_and_not_made_again_empty(tmp_path: Path) -> None:
    with kestrel(tmp_path) as engine:
        assert search_on_a_new_thread(engine) is None
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / (DB_FILE + suffix)).unlink(missing_ok=True)
        refused = search_on_a_new_thread(engine)
        assert isinstance(refused, errors.EngineResponseError), refused
        assert f"the database {tmp_path / DB_FILE} is gone" in str(refused)
        assert not (tmp_path / DB_FILE).exists()


def test_an_engine_on_a_new_directory_still_creates_its_database(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "new")
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        assert search_on_a_new_thread(engine) is None
    finally:
        engine.close()
    assert (tmp_path / "new" / DB_FILE).is_file()


@pytest.mark.parametrize("name", ["with space", "per%cent", "hash#mark", "question?mark"])
def test_a_data_directory_whose_name_uri_syntax_would_misread_opens_on_every_thread(tmp_path: Path, name: str) -> None:
    with kestrel(tmp_path / name) as engine:
        assert search_on_a_new_thread(engine) is None


def test_closing_an_engine_whose_data_directory_was_moved_away_does_not_make_it_again(tmp_path: Path) -> None:
    # Its graphs' save made data/vectors again: the directory moved back with `mv away data` then went inside it.
    data, away = tmp_path / "data", tmp_path / "away"
    with opened(data, VECTOR, ("a", {"vec": [1, 0]})) as engine:
        assert engine.search("idx", _NEAREST).hits[0].id == "a"
        data.rename(away)
    assert not data.exists()
    assert (away / DB_FILE).is_file()


def test_a_write_through_a_connection_opened_before_the_database_was_removed_is_refused(tmp_path: Path) -> None:
    # That connection still wrote, into a file no process reads again, and said it had.
    with kestrel(tmp_path) as engine:
        (tmp_path / DB_FILE).unlink()
        with pytest.raises(
            errors.EngineResponseError, match=f"cannot write: the database {tmp_path / DB_FILE} is gone"
        ):
            engine.update_aliases([{"add": {"index": "idx", "alias": "notes"}}])
        with pytest.raises(errors.EngineResponseError, match="is gone"):
            engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})])
        assert not (tmp_path / DB_FILE).exists()


def test_a_database_replaced_by_a_copy_is_refused_on_every_thread(tmp_path: Path) -> None:
    # Connections opened before wrote into the removed file (acknowledged, then lost); new ones read the copy.
    data = tmp_path / "data"
    with kestrel(data) as engine:
        shutil.copytree(data, tmp_path / "backup")
        shutil.rmtree(data)
        shutil.copytree(tmp_path / "backup", data)
        replaced = f"the database {data / DB_FILE} is not the file this process opened"
        with pytest.raises(errors.EngineResponseError, match=replaced):
            engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})])
        refused = search_on_a_new_thread(engine)
        assert isinstance(refused, errors.EngineResponseError) and replaced in str(refused), refused
    again = EmbeddedEngine(data)
    try:
        assert [hit.id for hit in again.search("idx", {"query": {"match_all": {}}}).hits] == ["a"]
    finally:
        again.close()


def test_a_data_directory_moved_away_and_back_is_the_same_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with opened(data, TEXT) as engine:
        data.rename(tmp_path / "away")
        assert engine.database_problem() is not None
        (tmp_path / "away").rename(data)
        assert engine.database_problem() is None
        assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "kestrel"})]).failed
        assert search_on_a_new_thread(engine) is None


@pytest.mark.parametrize("replaced", [None, "directory", "database"])
def test_closing_saves_graphs_and_full_text_changes_only_beside_the_database_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, replaced: str | None
) -> None:
    # A restored copy got this process's graphs (and the full-text changes it held) saved beside it: state of
    # writes the copy never had, which the next process took for the copy's own.
    monkeypatch.setattr(datadir, "COMMIT_AT_ONCE_BELOW", 0)  # the full-text changes wait in the writer until close
    monkeypatch.setattr(datadir, "COMMIT_AFTER_S", 600)
    monkeypatch.setattr(lexical, "COMMIT_AFTER_S", 600)
    data = tmp_path / "data"
    documents = [(f"d{i}", {"body": "kestrel", "vec": [1, i]}) for i in range(20)]
    with opened(data, {**TEXT, **VECTOR}, *documents) as engine:
        for handles in engine._shared._handles.values():
            handles.settle()  # (the graph worker has written the float32 copies)
        assert not list((data / "vectors").glob("*.usearch")), "the graph is not saved before close"
        if replaced is not None:
            restore_a_copy(data, replaced)
        before = saved(data)
        assert segments(data) == [], "the full-text changes wait in the writer"
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            engine.close()
    if replaced is None:
        assert list((data / "vectors").glob("*.usearch")), "a normal close saves the graph"
        assert segments(data), "and commits the full-text changes"
        assert "not saved" not in caplog.text
    else:
        assert saved(data) == before
        said = f"index [idx]: its full-text changes and graphs were not saved: the database {data / DB_FILE} is not"
        assert said in caplog.text


def test_a_folder_put_in_place_of_the_database_is_no_database(tmp_path: Path) -> None:
    # It was called a replacement ("not the file this process opened"), as a copy of the database is.
    with kestrel(tmp_path) as engine:
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / (DB_FILE + suffix)).unlink(missing_ok=True)
        (tmp_path / DB_FILE).mkdir()
        problem = engine.database_problem()
        assert problem is not None and problem.kind == "gone"
        assert str(problem).startswith(f"the database {tmp_path / DB_FILE} is gone")
        with pytest.raises(errors.EngineResponseError, match="is gone"):
            engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})])


@pytest.mark.parametrize("replaced", ["directory", "database"])
def test_the_delayed_full_text_commit_commits_nothing_beside_a_restored_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, replaced: str
) -> None:
    # The commit a large write puts off until writing pauses went into the copy restored meanwhile: segments and a
    # recorded state of writes the copy never had, which the next process took for the copy's own.
    monkeypatch.setattr(datadir, "COMMIT_AT_ONCE_BELOW", 0)  # (as a write of 1,000 changes or more)
    monkeypatch.setattr(datadir, "COMMIT_AFTER_S", 1.0)
    monkeypatch.setattr(lexical, "COMMIT_AFTER_S", 600)
    data = tmp_path / "data"
    with opened(data, TEXT) as engine:
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            assert not engine.bulk("idx", [BulkAction("index", f"d{i}", {"body": "kestrel"}) for i in range(20)]).failed
            restore_a_copy(data, replaced)
            before = saved(data)
            assert segments(data) == [], "the full-text changes wait in the writer"
            (handles,) = engine._shared._handles.values()
            deadline = time.monotonic() + 30
            while "not committed" not in caplog.text and handles.lexical.dirty and time.monotonic() < deadline:
                time.sleep(0.05)
        assert saved(data) == before
        said = f"index [idx]: its full-text changes were not committed: {NOT_OPENED.format(data / DB_FILE)}"
        assert said in caplog.text


@pytest.mark.parametrize("replaced", ["directory", "database"])
def test_graph_updates_of_a_write_committed_before_a_restore_write_no_float32_copies_beside_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, replaced: str
) -> None:
    # The graph worker, running the update of a write committed just before the copy was restored, wrote that
    # write's float32 copies into the copy's vectors/, where the copy's own rows read them.
    data = tmp_path / "data"
    gate = threading.Event()
    with opened(data, VECTOR, ("a", {"vec": [1, 0]})) as engine, contextlib.ExitStack() as held:
        held.callback(gate.set)  # (before the engine closes, which waits for the graph worker)
        assert engine.search("idx", _NEAREST).hits[0].id == "a"
        engine._shared._workers.submit(gate.wait, 60)  # the graph worker is busy: the next write's update waits
        assert not engine.bulk("idx", [BulkAction("index", f"d{i}", {"vec": [1, i]}) for i in range(20)]).failed
        restore_a_copy(data, replaced)
        before = saved(data)
        with caplog.at_level(logging.WARNING, logger="esbridge"):
            gate.set()
            for handles in engine._shared._handles.values():
                handles.settle()
        assert saved(data) == before
        said = f"index [idx]: the float32 copies of [vec] were not written: {NOT_OPENED.format(data / DB_FILE)}"
        assert said in caplog.text


@pytest.mark.parametrize("write", ["documents", "mapping"])
def test_a_write_committed_just_before_a_restore_brings_nothing_up_in_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    # Catching up with that write through a connection opened before the restore read the removed database and
    # wrote what it read into the copy's full-text folders: its new rows, or (a mapping that adds a field) a whole
    # new folder built from the removed database, the copy's own folder removed.
    data = tmp_path / "data"
    with kestrel(data) as engine:
        assert search_on_a_new_thread(engine) is None
        refresh, restored = engine._refresh, {}

        def restored_first(record: IndexRecord) -> None:  # a backup restored between the commit and the catch-up
            restore_a_copy(data, "directory")
            restored.update(files(data))
            refresh(record)

        monkeypatch.setattr(engine, "_refresh", restored_first)
        said = f"index \\[idx\\] was not brought up to date: {NOT_OPENED.format(data / DB_FILE)}"
        writes: dict[str, Callable[[], object]] = {
            "documents": lambda: engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})]),
            "mapping": lambda: engine.put_mapping("idx", {"title": {"type": "text"}}),
        }
        with pytest.raises(errors.EngineResponseError, match=said):
            writes[write]()
        assert restored and files(data) == restored
