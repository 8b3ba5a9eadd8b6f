"""The embedded database file removed while an engine has it open: a thread that opens its own connection then
is refused, naming the file, and no new empty database takes the old one's place."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, datadir, lexical
from esbridge.engines.embedded.store import DB_FILE, IndexRecord


def _search_on_a_new_thread(engine: EmbeddedEngine) -> BaseException | None:
    caught: list[BaseException] = []

    def search() -> None:
        try:
            engine.search("idx", {"query": {"match": {"body": "kestrel"}}})
        except BaseException as exc:  # handed to the test's thread
            caught.append(exc)

    thread = threading.Thread(target=search)
    thread.start()
    thread.join()
    return caught[0] if caught else None


@contextmanager
def _kestrel(data: Path) -> Iterator[EmbeddedEngine]:
    """An engine on ``data`` whose index ``idx`` holds the document ``a`` ("kestrel"), closed afterwards."""
    engine = EmbeddedEngine(data)
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "kestrel"})]).failed
        yield engine
    finally:
        engine.close()


def test_a_removed_database_is_named_and_not_made_again_empty(tmp_path: Path) -> None:
    with _kestrel(tmp_path) as engine:
        assert _search_on_a_new_thread(engine) is None
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / (DB_FILE + suffix)).unlink(missing_ok=True)
        refused = _search_on_a_new_thread(engine)
        assert isinstance(refused, errors.EngineResponseError), refused
        assert f"the database {tmp_path / DB_FILE} is gone" in str(refused)
        assert not (tmp_path / DB_FILE).exists()


def test_an_engine_on_a_new_directory_still_creates_its_database(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "new")
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        assert _search_on_a_new_thread(engine) is None
    finally:
        engine.close()
    assert (tmp_path / "new" / DB_FILE).is_file()


@pytest.mark.parametrize("name", ["with space", "per%cent", "hash#mark", "question?mark"])
def test_a_data_directory_whose_name_uri_syntax_would_misread_opens_on_every_thread(tmp_path: Path, name: str) -> None:
    with _kestrel(tmp_path / name) as engine:
        assert _search_on_a_new_thread(engine) is None


def test_closing_an_engine_whose_data_directory_was_moved_away_does_not_make_it_again(tmp_path: Path) -> None:
    # Its graphs' save made data/vectors again: the directory moved back with `mv away data` then went inside it.
    data, away = tmp_path / "data", tmp_path / "away"
    engine = EmbeddedEngine(data)
    try:
        method = {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"}
        vector = {"type": "knn_vector", "dimension": 2, "method": method}
        engine.create_index("idx", {"settings": {"index.knn": True}, "mappings": {"properties": {"vec": vector}}})
        assert not engine.bulk("idx", [BulkAction("index", "a", {"vec": [1, 0]})]).failed
        assert engine.search("idx", {"query": {"knn": {"vec": {"vector": [1, 0], "k": 1}}}}).hits[0].id == "a"
        data.rename(away)
    finally:
        engine.close()
    assert not data.exists()
    assert (away / DB_FILE).is_file()


def test_a_write_through_a_connection_opened_before_the_database_was_removed_is_refused(tmp_path: Path) -> None:
    # That connection still wrote, into a file no process reads again, and said it had.
    with _kestrel(tmp_path) as engine:
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
    with _kestrel(data) as engine:
        shutil.copytree(data, tmp_path / "backup")
        shutil.rmtree(data)
        shutil.copytree(tmp_path / "backup", data)
        replaced = f"the database {data / DB_FILE} is not the file this process opened"
        with pytest.raises(errors.EngineResponseError, match=replaced):
            engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})])
        refused = _search_on_a_new_thread(engine)
        assert isinstance(refused, errors.EngineResponseError) and replaced in str(refused), refused
    again = EmbeddedEngine(data)
    try:
        assert [hit.id for hit in again.search("idx", {"query": {"match_all": {}}}).hits] == ["a"]
    finally:
        again.close()


def test_a_data_directory_moved_away_and_back_is_the_same_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    engine = EmbeddedEngine(data)
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        data.rename(tmp_path / "away")
        assert engine.database_problem() is not None
        (tmp_path / "away").rename(data)
        assert engine.database_problem() is None
        assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "kestrel"})]).failed
        assert _search_on_a_new_thread(engine) is None
    finally:
        engine.close()


def _saved(data: Path) -> dict[str, bytes]:
    """The graphs and float32 copies, and what the full-text indices record as committed (segments, progress)."""
    found = [
        *(data / "vectors").rglob("*"),
        *(data / "lexical").glob("*/meta.json"),
        *(data / "lexical").glob("*/state.json"),
    ]
    return {str(path.relative_to(data)): path.read_bytes() for path in sorted(found) if path.is_file()}


def _segments(data: Path) -> list[object]:
    (meta,) = (data / "lexical").glob("*/meta.json")
    segments: list[object] = json.loads(meta.read_text(encoding="utf-8"))["segments"]
    return segments


def _copy_unless_gone(source: str, destination: str) -> None:
    """A file copied, unless it went while the copy was made (a temporary file of tantivy's threads)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(source, destination)


def _restore_a_copy(data: Path, what: str) -> None:
    """A backup of ``data`` (the whole directory, or its database alone) put in its place."""
    if what == "directory":
        shutil.copytree(data, data.with_name("backup"), copy_function=_copy_unless_gone)
        data.rename(data.with_name("original"))  # (not removed: tantivy's threads may still write files in it)
        shutil.copytree(data.with_name("backup"), data)
    else:
        shutil.copyfile(data / DB_FILE, data.with_name("backup.sqlite3"))
        os.replace(data.with_name("backup.sqlite3"), data / DB_FILE)


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
    engine = EmbeddedEngine(data)
    try:
        method = {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"}
        mappings = {
            "properties": {"body": {"type": "text"}, "vec": {"type": "knn_vector", "dimension": 2, "method": method}}
        }
        engine.create_index("idx", {"settings": {"index.knn": True}, "mappings": mappings})
        actions = [BulkAction("index", f"d{i}", {"body": "kestrel", "vec": [1, i]}) for i in range(20)]
        assert not engine.bulk("idx", actions).failed
        for handles in engine._shared._handles.values():
            handles.settle()  # (the graph worker has written the float32 copies)
        assert not list((data / "vectors").glob("*.usearch")), "the graph is not saved before close"
        if replaced is not None:
            _restore_a_copy(data, replaced)
        before = _saved(data)
        assert _segments(data) == [], "the full-text changes wait in the writer"
        with caplog.at_level(logging.WARNING, logger="esbridge.embedded"):
            engine.close()
    finally:
        engine.close()
    if replaced is None:
        assert list((data / "vectors").glob("*.usearch")), "a normal close saves the graph"
        assert _segments(data), "and commits the full-text changes"
        assert "not saved" not in caplog.text
    else:
        assert _saved(data) == before
        said = f"index [idx]: its full-text changes and graphs were not saved: the database {data / DB_FILE} is not"
        assert said in caplog.text


def test_a_folder_put_in_place_of_the_database_is_no_database(tmp_path: Path) -> None:
    # It was called a replacement ("not the file this process opened"), as a copy of the database is.
    with _kestrel(tmp_path) as engine:
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / (DB_FILE + suffix)).unlink(missing_ok=True)
        (tmp_path / DB_FILE).mkdir()
        problem = engine.database_problem()
        assert problem is not None and problem.kind == "gone"
        assert str(problem).startswith(f"the database {tmp_path / DB_FILE} is gone")
        with pytest.raises(errors.EngineResponseError, match="is gone"):
            engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})])


def _files(data: Path) -> dict[str, bytes]:
    """Every file under ``data`` (its path there) and its bytes."""
    return {str(path.relative_to(data)): path.read_bytes() for path in sorted(data.rglob("*")) if path.is_file()}


_NOT_OPENED = "the database {} is not the file this process opened"


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
    engine = EmbeddedEngine(data)
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        with caplog.at_level(logging.WARNING, logger="esbridge.embedded"):
            assert not engine.bulk("idx", [BulkAction("index", f"d{i}", {"body": "kestrel"}) for i in range(20)]).failed
            _restore_a_copy(data, replaced)
            before = _saved(data)
            assert _segments(data) == [], "the full-text changes wait in the writer"
            (handles,) = engine._shared._handles.values()
            deadline = time.monotonic() + 30
            while "not committed" not in caplog.text and handles.lexical.dirty and time.monotonic() < deadline:
                time.sleep(0.05)
        assert _saved(data) == before
        said = f"index [idx]: its full-text changes were not committed: {_NOT_OPENED.format(data / DB_FILE)}"
        assert said in caplog.text
    finally:
        engine.close()


@pytest.mark.parametrize("replaced", ["directory", "database"])
def test_graph_updates_of_a_write_committed_before_a_restore_write_no_float32_copies_beside_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, replaced: str
) -> None:
    # The graph worker, running the update of a write committed just before the copy was restored, wrote that
    # write's float32 copies into the copy's vectors/, where the copy's own rows read them.
    data = tmp_path / "data"
    engine = EmbeddedEngine(data)
    gate = threading.Event()
    try:
        method = {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"}
        vector = {"type": "knn_vector", "dimension": 2, "method": method}
        engine.create_index("idx", {"settings": {"index.knn": True}, "mappings": {"properties": {"vec": vector}}})
        assert not engine.bulk("idx", [BulkAction("index", "a", {"vec": [1, 0]})]).failed
        assert engine.search("idx", {"query": {"knn": {"vec": {"vector": [1, 0], "k": 1}}}}).hits[0].id == "a"
        engine._shared._workers.submit(gate.wait, 60)  # the graph worker is busy: the next write's update waits
        assert not engine.bulk("idx", [BulkAction("index", f"d{i}", {"vec": [1, i]}) for i in range(20)]).failed
        _restore_a_copy(data, replaced)
        before = _saved(data)
        with caplog.at_level(logging.WARNING, logger="esbridge.embedded"):
            gate.set()
            for handles in engine._shared._handles.values():
                handles.settle()
        assert _saved(data) == before
        said = f"index [idx]: the float32 copies of [vec] were not written: {_NOT_OPENED.format(data / DB_FILE)}"
        assert said in caplog.text
    finally:
        gate.set()
        engine.close()


@pytest.mark.parametrize("write", ["documents", "mapping"])
def test_a_write_committed_just_before_a_restore_brings_nothing_up_in_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    # Catching up with that write through a connection opened before the restore read the removed database and
    # wrote what it read into the copy's full-text folders: its new rows, or (a mapping that adds a field) a whole
    # new folder built from the removed database, the copy's own folder removed.
    data = tmp_path / "data"
    engine = EmbeddedEngine(data)
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "kestrel"})]).failed
        assert _search_on_a_new_thread(engine) is None
        refresh, restored = engine._refresh, {}

        def restored_first(record: IndexRecord) -> None:  # a backup restored between the commit and the catch-up
            _restore_a_copy(data, "directory")
            restored.update(_files(data))
            refresh(record)

        monkeypatch.setattr(engine, "_refresh", restored_first)
        said = f"index \\[idx\\] was not brought up to date: {_NOT_OPENED.format(data / DB_FILE)}"
        writes: dict[str, Callable[[], object]] = {
            "documents": lambda: engine.bulk("idx", [BulkAction("index", "b", {"body": "heron"})]),
            "mapping": lambda: engine.put_mapping("idx", {"title": {"type": "text"}}),
        }
        with pytest.raises(errors.EngineResponseError, match=said):
            writes[write]()
        assert restored and _files(data) == restored
    finally:
        engine.close()
