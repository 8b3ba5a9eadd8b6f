"""Searches remember what an alias stands for, and follow every alias change: of the same engine, another
engine of the process, or another process; writes go to its write index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine

BODY = {"mappings": {"properties": {"text": {"type": "text"}}}}
_MOVE = """
import sys
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine.update_aliases([{"remove": {"index": "old", "alias": "current"}}, {"add": {"index": "new", "alias": "current"}}])
engine.close()
"""


def _ids(engine: EmbeddedEngine, name: str) -> list[str]:
    return [hit.id for hit in engine.search(name, {"query": {"match": {"text": "word"}}}).hits]


def _two_indices(data: Path) -> None:
    engine = EmbeddedEngine(data)
    for name in ("old", "new"):
        engine.create_index(name, BODY)
        engine.bulk(name, [BulkAction("index", f"{name}-1", {"text": "word"})])
    engine.update_aliases([{"add": {"index": "old", "alias": "current"}}])
    engine.close()


def test_a_search_follows_an_alias_moved_by_another_process(tmp_path: Path) -> None:
    _two_indices(tmp_path)
    reader = EmbeddedEngine(tmp_path)
    try:
        assert _ids(reader, "current") == ["old-1"]
        assert _ids(reader, "current") == ["old-1"]
        subprocess.run([sys.executable, "-c", _MOVE, str(tmp_path)], check=True, capture_output=True)
        assert _ids(reader, "current") == ["new-1"]
    finally:
        reader.close()


def test_a_search_follows_an_alias_moved_by_the_same_engine_and_by_another_one(tmp_path: Path) -> None:
    _two_indices(tmp_path)
    engine, other = EmbeddedEngine(tmp_path), EmbeddedEngine(tmp_path)
    try:
        assert _ids(engine, "current") == _ids(other, "current") == ["old-1"]
        engine.update_aliases(
            [{"remove": {"index": "old", "alias": "current"}}, {"add": {"index": "new", "alias": "current"}}]
        )
        assert _ids(engine, "current") == _ids(other, "current") == ["new-1"]
        other.delete_index("new")
        assert engine.index_exists("current") is False
        assert _ids(engine, "old") == ["old-1"]
    finally:
        engine.close()
        other.close()


def test_an_index_that_stopped_being_the_write_index_takes_writes_again_once_alone(tmp_path: Path) -> None:
    """Where a cluster refuses a second write index, the embedded engine moves the flag; the index it moved it from
    is not flagged false, which would refuse writes once it is the alias's only index again."""
    _two_indices(tmp_path)
    engine = EmbeddedEngine(tmp_path)
    engine.update_aliases([{"add": {"index": "old", "alias": "current", "is_write_index": True}}])
    engine.update_aliases([{"add": {"index": "new", "alias": "current", "is_write_index": True}}])
    engine.update_aliases([{"remove": {"index": "new", "alias": "current"}}])
    assert list(engine.bulk("current", [BulkAction("index", "old-2", {"text": "word"})]).succeeded) == ["old-2"]
    assert sorted(_ids(engine, "current")) == ["old-1", "old-2"]
    engine.close()
