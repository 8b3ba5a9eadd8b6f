"""A data directory the embedded engine cannot write (a disk that is full, a file in the way): each call says so as
an esbridge error naming the data directory, as the command line shows in one ``Error:`` line, not a traceback."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from esbridge import errors
from esbridge.cli import main
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann
from esbridge.engines.embedded.writer import LOCK_FILE

# A disk that fills up, as the kernel reports it: files may grow to 10 MB. The float32 copies of a vector are
# written at an offset its database row gives, so rows of another index first put the second vector's past that.
_FULL = """
import resource, sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann
from esbridge.errors import EsbridgeError
engine = EmbeddedEngine(sys.argv[1])
engine.create_index("pad", {"mappings": {"properties": {"t": {"type": "keyword"}}}})
engine.bulk("pad", [BulkAction("index", f"p{i}", {"t": "x"}) for i in range(3000)])
vector = {"type": "knn_vector", "dimension": 1024, "method": {"name": "hnsw", "space_type": "cosinesimil"}}
engine.create_index("x", {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"v": vector}}})
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000_000, 10_000_000))
for doc_id in ("a", "b"):
    try:
        engine.bulk("x", [BulkAction("index", doc_id, {"v": [1.0] * 1024})])
    except EsbridgeError as exc:
        print(doc_id, type(exc).__name__, exc)
"""


def test_a_full_disk_is_reported_as_an_engine_error_naming_the_data_directory(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FULL, str(tmp_path)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, (
        "the graph work of a write runs after it returns; the next write waits for it, and reports it"
    )
    assert lines[0].startswith("b EngineResponseError bulk write failed on embedded:")
    assert str(tmp_path) in lines[0]
    assert "File too large" in lines[0]


def test_a_writer_lock_that_cannot_be_opened_is_reported_naming_it(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    try:
        (tmp_path / LOCK_FILE).mkdir()
        with pytest.raises(errors.EngineError) as raised:
            engine.create_index("x", {"mappings": {"properties": {}}})
        assert str(tmp_path / LOCK_FILE) in str(raised.value)
        assert not engine.index_exists("x")
        assert engine.bulk("x", []).succeeded == []
        with pytest.raises(errors.EngineError):
            engine.bulk("x", [BulkAction("index", "a", {})])
    finally:
        engine.close()


def test_structures_that_cannot_be_saved_at_close_are_a_warning_and_the_next_process_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vector = {"type": "knn_vector", "dimension": 2, "method": {"name": "hnsw", "space_type": "cosinesimil"}}
    engine = EmbeddedEngine(tmp_path)
    for name in ("first", "second"):
        engine.create_index(name, {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"v": vector}}})
        assert not engine.bulk(name, [BulkAction("index", "a", {"v": [1.0, 0.0]})]).failed
    record = engine._store.index("first")
    assert record is not None
    in_the_way = ann.path_for(tmp_path, record.id, "v").with_suffix(".tmp")  # where its graph is written first
    in_the_way.mkdir()
    with caplog.at_level(logging.WARNING, logger="esbridge"):
        engine.close()
    assert "index [first]" in caplog.text and "not saved" in caplog.text
    assert sorted(path.name for path in (tmp_path / "vectors").glob("*.usearch")) == [f"{record.id + 1}.v.usearch"]
    in_the_way.rmdir()
    engine = EmbeddedEngine(tmp_path)
    try:
        knn = {"size": 2, "query": {"knn": {"v": {"vector": [1.0, 0.0], "k": 2}}}}
        assert [hit.id for hit in engine.search("first", knn).hits] == ["a"]
        assert [hit.id for hit in engine.search("second", knn).hits] == ["a"]
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("setting", "in_the_way", "said"),
    [("data", "data", "it is a file"), ("data/sub", "data", "{tmp}/data, on its path, is a file")],
)
def test_a_data_directory_that_is_a_file_is_said_to_be_no_folder_naming_the_setting(
    tmp_path: Path, setting: str, in_the_way: str, said: str
) -> None:
    (tmp_path / in_the_way).write_text("not a folder\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["index", "list"], env={"ESBRIDGE_DATA_DIR": str(tmp_path / setting)})
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the embedded engine's data directory {tmp_path / setting} is not a folder: "
        f"{said.format(tmp=tmp_path)}. Set data_dir (ESBRIDGE_DATA_DIR, or data_dir in the settings file) to a "
        "folder, or to one that does not exist yet\n"
    )
    assert (tmp_path / in_the_way).read_text(encoding="utf-8") == "not a folder\n"


def _not_utf8(folder: Path, name: bytes) -> str:
    """``folder``/``name``, a name whose bytes are not UTF-8, as Python hands such a path over (os.fsdecode)."""
    return os.fsdecode(os.fsencode(folder) + b"/" + name)


_NOT_UTF8 = "is not valid UTF-8, which its full-text indices need. Set data_dir (ESBRIDGE_DATA_DIR, or data_dir in the "


def test_a_data_directory_whose_path_is_not_utf8_is_refused_on_the_command_line_naming_it(tmp_path: Path) -> None:
    # It was made and written, then every search said its full-text index was damaged.
    result = CliRunner().invoke(main, ["index", "list"], env={"ESBRIDGE_DATA_DIR": _not_utf8(tmp_path, b"data\xff")})
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the embedded engine's data directory {tmp_path}/data\\xff {_NOT_UTF8}settings file) to a folder whose "
        "path is UTF-8\n"
    )
    assert list(tmp_path.iterdir()) == [], "nothing made"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (lambda tmp: _not_utf8(tmp, b"caf\xe9/data"), "{tmp}/caf\\xe9/data"),
        (lambda tmp: Path(_not_utf8(tmp, b"x\xff")), "{tmp}/x\\xff"),
        (lambda tmp: "data", "data (it resolves to {tmp}/caf\\xe9/data)"),
        (lambda tmp: os.fsencode(tmp) + b"/x\xff", "{tmp}/x\\xff"),
    ],
    ids=["a folder on its path", "its name", "the current folder", "its name as bytes"],
)
def test_a_data_directory_whose_path_is_not_utf8_is_refused_by_the_engine_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: Callable[[Path], str | Path | bytes], said: str
) -> None:
    current = Path(_not_utf8(tmp_path, b"caf\xe9"))
    current.mkdir()
    monkeypatch.chdir(current)  # (for a relative path: the folder it is in is not UTF-8)
    with pytest.raises(errors.ConfigError) as refused:
        EmbeddedEngine(given(tmp_path))
    assert str(refused.value).startswith(
        f"the embedded engine's data directory {said.format(tmp=tmp_path)} {_NOT_UTF8}"
    )
    assert [path.name for path in tmp_path.iterdir()] == [current.name] and not list(current.iterdir())


def test_a_data_directory_given_as_bytes_is_the_folder_they_name(tmp_path: Path) -> None:
    # Bytes (as os.fsencode gives a path) raised a bare TypeError from pathlib, naming neither the setting nor why.
    engine = EmbeddedEngine(os.fsencode(tmp_path / "data"))
    try:
        engine.create_index("idx", {"mappings": {"properties": {"body": {"type": "text"}}}})
        assert not engine.bulk("idx", [BulkAction("index", "a", {"body": "kestrel"})]).failed
        assert [hit.id for hit in engine.search("idx", {"query": {"match": {"body": "kestrel"}}}).hits] == ["a"]
        assert engine.data_dir == tmp_path / "data"
    finally:
        engine.close()
    with pytest.raises(TypeError, match=r"^the embedded engine's data directory must be a path, not int$"):
        EmbeddedEngine(7)  # type: ignore[arg-type]
