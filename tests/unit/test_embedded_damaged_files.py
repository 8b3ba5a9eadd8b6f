"""A data directory whose full-text index lost or spoilt a file: the database is the truth, so the next process
that may write builds that index again from it; one that may not says which folder is damaged."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.writer import LOCK_FILE

COUNT = 120


def _written(root: Path) -> Path:
    """The only full-text folder of an index of COUNT documents, written and closed."""
    engine = EmbeddedEngine(root)
    engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
    assert not engine.bulk(
        "idx", [BulkAction("index", f"d{i}", {"body": f"common word{i}"}) for i in range(COUNT)]
    ).failed
    engine.close()
    (folder,) = (root / "lexical").iterdir()
    return folder


def _found(engine: EmbeddedEngine) -> list[str]:
    hits = engine.search("idx", {"size": 1000, "_source": False, "query": {"match": {"body": "common"}}}).hits
    return sorted(hit.id for hit in hits)


def _remove_meta(folder: Path) -> None:
    (folder / "meta.json").unlink()


def _spoil_meta(folder: Path) -> None:
    (folder / "meta.json").write_text("{")


def _remove_a_segment_file(folder: Path) -> None:
    next(folder.glob("*.idx")).unlink()


def _cut_a_segment_file(folder: Path) -> None:
    path = next(folder.glob("*.term"))
    os.truncate(path, path.stat().st_size // 2)


DAMAGE = [_remove_meta, _spoil_meta, _remove_a_segment_file, _cut_a_segment_file]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_full_text_index_is_built_again_from_the_database(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    damage(_written(tmp_path))
    engine = EmbeddedEngine(tmp_path)
    try:
        assert _found(engine) == sorted(f"d{i}" for i in range(COUNT))
        assert not engine.bulk("idx", [BulkAction("index", "new", {"body": "common fresh"})]).failed
        assert len(_found(engine)) == COUNT + 1
    finally:
        engine.close()
    engine = EmbeddedEngine(tmp_path)
    try:
        assert len(_found(engine)) == COUNT + 1
    finally:
        engine.close()


@contextmanager
def _another_writer(root: Path) -> Iterator[None]:
    """The writer lock held as another process holds it (a second open file description of the lock file)."""
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("damage", [_spoil_meta, _remove_a_segment_file])
def test_a_process_that_may_not_write_names_the_damaged_folder(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    folder = _written(tmp_path)
    damage(folder)
    engine = EmbeddedEngine(tmp_path)
    try:
        with _another_writer(tmp_path), pytest.raises(errors.EngineError) as raised:
            _found(engine)
        assert str(folder) in str(raised.value)
        assert "damaged" in str(raised.value)
        assert _found(engine) == sorted(f"d{i}" for i in range(COUNT)), "once it may write, it builds it again"
    finally:
        engine.close()


def test_a_full_text_index_removed_while_the_writer_runs_is_built_again_by_its_next_write(tmp_path: Path) -> None:
    # Before, every later write, and a search after it, failed in tantivy ("Failed to acquire Lockfile"): 500s.
    engine = EmbeddedEngine(tmp_path)
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        first = [BulkAction("index", f"d{i}", {"body": f"common word{i}"}) for i in range(3)]
        assert not engine.bulk("idx", first).failed
        (folder,) = (tmp_path / "lexical").iterdir()
        shutil.rmtree(folder)
        assert _found(engine) == ["d0", "d1", "d2"]  # from the files it holds open
        assert not engine.bulk("idx", [BulkAction("index", "d3", {"body": "common word3"})]).failed
        assert _found(engine) == ["d0", "d1", "d2", "d3"]
        assert (folder / "meta.json").is_file()
    finally:
        engine.close()
    again = EmbeddedEngine(tmp_path)
    try:
        assert _found(again) == ["d0", "d1", "d2", "d3"]
    finally:
        again.close()
