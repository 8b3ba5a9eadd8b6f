"""A process that only searches a data directory while other processes write it, one after another: it sees each
writer's commits, repairs what a killed one left without keeping the writer lock, and lets go of the indices
they delete."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import Any

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine

_WRITER = """
import os, sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
root, index, first, count, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
engine = EmbeddedEngine(root)
if not engine.index_exists(index):
    engine.create_index(index, {"mappings": {"properties": {"body": {"type": "text"}}}})
actions = [BulkAction("index", f"d{i}", {"body": f"common word{i}"}) for i in range(first, first + count)]
assert not engine.bulk(index, actions).failed
if end == "kill":
    os._exit(0)  # killed: a write of this size leaves its full text uncommitted for a while
engine.close()
"""

_DELETER = """
import sys
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine.delete_index(sys.argv[2])
engine.close()
"""


def write(root: Path, first: int, count: int, *, index: str = "idx", end: str = "close") -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(root), index, str(first), str(count), end],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def matching(engine: EmbeddedEngine, index: str = "idx") -> int:
    return engine.search(index, {"size": 0, "query": {"match": {"body": "common"}}}).total


def test_a_searching_process_sees_each_writer_processs_writes_and_never_keeps_the_writer_lock(
    tmp_path: Path,
) -> None:
    write(tmp_path, 0, 1)
    reader = EmbeddedEngine(tmp_path)
    try:
        assert matching(reader) == 1
        write(tmp_path, 1, 1)
        assert matching(reader) == 2
        write(tmp_path, 2, 1)  # the reader did not take the lock: the next writer writes
        assert matching(reader) == 3
    finally:
        reader.close()


def test_a_searching_process_repairs_what_a_killed_writer_left_and_gives_the_lock_back(tmp_path: Path) -> None:
    write(tmp_path, 0, 10)
    reader = EmbeddedEngine(tmp_path)
    try:
        assert matching(reader) == 10
        write(tmp_path, 10, 1500, end="kill")  # committed to the database, not to the full-text index
        assert matching(reader) == 1510
        assert reader.search("idx", {"query": {"match": {"body": "word1234"}}}).hits[0].id == "d1234"
        write(tmp_path, 1510, 5)  # the ingest run again: not refused
        assert matching(reader) == 1515
        assert reader.count("idx") == 1515
    finally:
        reader.close()


def _mapped(root: Path) -> list[str]:
    """The files under ``root`` this process maps that are deleted."""
    with open("/proc/self/maps") as maps:
        return [line for line in maps if str(root) in line and line.rstrip().endswith("(deleted)")]


def test_a_searching_process_lets_go_of_an_index_another_process_deleted(tmp_path: Path) -> None:
    write(tmp_path, 0, 50, index="old")
    write(tmp_path, 0, 50, index="new")
    reader = EmbeddedEngine(tmp_path)
    try:
        assert matching(reader, "old") == matching(reader, "new") == 50
        done = subprocess.run([sys.executable, "-c", _DELETER, str(tmp_path), "old"], check=False, timeout=120)
        assert done.returncode == 0
        write(tmp_path, 50, 1, index="new")
        assert matching(reader, "new") == 51
        gc.collect()
        assert _mapped(tmp_path) == []  # the deleted index's files: their disk space is given back
    finally:
        reader.close()


_REMAPPER = """
import sys
from esbridge.engines.embedded import EmbeddedEngine, lexical
apply = lexical.LexicalIndex.apply
def paused(self, *args, **kwargs):
    if self.fresh and kwargs.get("clear"):  # the new layout's build: wait for the test to let it go on
        print("building", flush=True)
        sys.stdin.readline()
    apply(self, *args, **kwargs)
lexical.LexicalIndex.apply = paused
engine = EmbeddedEngine(sys.argv[1])
engine.put_mapping("idx", {"extra": {"type": "keyword"}})  # a new field: the full text is built again
engine.close()
"""


def test_a_searching_process_finds_everything_once_another_process_has_rebuilt_the_full_text(tmp_path: Path) -> None:
    write(tmp_path, 0, 50)
    reader = EmbeddedEngine(tmp_path)
    remapper = subprocess.Popen(
        [sys.executable, "-c", _REMAPPER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert remapper.stdin is not None and remapper.stdout is not None
    try:
        assert matching(reader) == 50
        assert remapper.stdout.readline().strip() == "building"
        matching(reader)  # while the other process builds: it finds what has been built
        remapper.stdin.write("\n")
        remapper.stdin.close()
        assert remapper.wait(120) == 0
        assert matching(reader) == 50
        assert reader.search("idx", {"query": {"match": {"body": "word7"}}}).hits[0].id == "d7"
    finally:
        remapper.stdout.close()
        reader.close()


def test_a_search_that_meets_the_deletion_of_the_index_it_found_answers_from_where_the_alias_points_now(
    tmp_path: Path,
) -> None:
    for name in ("v1", "v2"):
        write(tmp_path, 0, 20, index=name)
    engine = EmbeddedEngine(tmp_path)
    other = EmbeddedEngine(tmp_path)  # another thread's engine: between this search's lookup and its answer
    try:
        engine.update_aliases([{"add": {"index": "v1", "alias": "live"}}])
        assert matching(engine, "live") == 20
        engine.bulk("v2", [BulkAction("delete", f"d{i}") for i in range(10)])
        ready = engine._shared.ready
        moved: list[int] = []

        def moving(*args: Any, **kwargs: Any) -> Any:
            if not moved:
                moved.append(1)
                other.update_aliases(
                    [{"remove": {"index": "v1", "alias": "live"}}, {"add": {"index": "v2", "alias": "live"}}]
                )
                other.delete_index("v1")
            return ready(*args, **kwargs)

        engine._shared.ready = moving  # type: ignore[method-assign]
        found = engine.search("live", {"size": 20, "_source": False, "query": {"match": {"body": "common"}}})
        assert moved
        assert (found.total, sorted(hit.id for hit in found.hits)) == (10, sorted(f"d{i}" for i in range(10, 20)))
        assert _owners(tmp_path) == {2}, "nothing made again for the deleted index"
    finally:
        other.close()
        engine.close()


def _owners(root: Path) -> set[int]:
    """The index ids that folders in ``lexical/`` belong to."""
    return {int(path.name.split("-")[0].split(".")[0]) for path in root.glob("lexical/*")}


def test_a_write_whose_index_is_deleted_before_it_is_searchable_reports_what_it_wrote(tmp_path: Path) -> None:
    write(tmp_path, 0, 1, index="gone")
    engine = EmbeddedEngine(tmp_path)
    other = EmbeddedEngine(tmp_path)
    try:
        ready = engine._shared.ready

        def deleted_first(*args: Any, **kwargs: Any) -> Any:
            other.delete_index("gone")  # by another thread, between the write's commit and its indexing
            return ready(*args, **kwargs)

        engine._shared.ready = deleted_first  # type: ignore[method-assign]
        written = engine.bulk("gone", [BulkAction("index", "late", {"body": "common"})])
        assert (list(written.succeeded), list(written.failed)) == (["late"], [])
        assert not engine.index_exists("gone")
    finally:
        other.close()
        engine.close()
