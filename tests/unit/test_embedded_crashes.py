"""A writer killed part-way through building a full-text index or deleting an index: the next process answers
like the database, and the next writer leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from esbridge.engines.embedded import EmbeddedEngine, lexical, lexical_folders
from esbridge.engines.embedded.lexical_layout import Layout

_WRITER = """
import os, sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, catch_up, datadir, lexical
root, index, first, count, kill = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
catch_up.BATCH, lexical.COMMIT_EVERY = 20, 50  # a build in pages, committed on the way, as at scale
if kill == "mid-build":
    apply, calls = lexical.LexicalIndex.apply, []
    def killed(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # 80 documents in: 50 of them committed
            os._exit(0)
        apply(self, *args, **kwargs)
    lexical.LexicalIndex.apply = killed
if kill == "deleting":
    datadir.DataDir.forget = lambda self, index_id: os._exit(0)  # after the database's commit
    EmbeddedEngine(root).delete_index(index)
engine = EmbeddedEngine(root)
if not engine.index_exists(index):
    engine.create_index(index, {"mappings": {"properties": {"body": {"type": "text"}}}})
actions = [BulkAction("index", f"d{i}", {"body": f"common word{i}"}) for i in range(first, first + count)]
assert not engine.bulk(index, actions).failed
engine.close()
"""


def write(root: Path, first: int, count: int, *, index: str = "idx", kill: str = "") -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(root), index, str(first), str(count), kill or "-"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def answers_like_the_database(root: Path, index: str = "idx") -> int:
    engine = EmbeddedEngine(root)
    try:
        stored = engine.count(index)
        found = engine.search(index, {"size": 1000, "_source": False, "query": {"match": {"body": "common"}}})
        assert found.total == stored
        assert sorted(hit.id for hit in found.hits) == sorted(f"d{i}" for i in range(stored))
        return stored
    finally:
        engine.close()


def test_a_full_text_index_whose_first_build_was_killed_is_built_whole_by_the_next_process(tmp_path: Path) -> None:
    write(tmp_path, 0, 300)  # closed: the change log is trimmed, so only a whole build finds every document
    shutil.rmtree(tmp_path / "lexical")  # rebuilt on the next open, as docs/embedded.md says
    write(tmp_path, 300, 1, kill="mid-build")  # its write committed, then the build it started killed
    assert answers_like_the_database(tmp_path) == 301
    write(tmp_path, 301, 1)
    assert answers_like_the_database(tmp_path) == 302


def test_a_full_text_index_rebuilt_in_pages_is_kept_by_the_next_process(tmp_path: Path) -> None:
    write(tmp_path, 0, 300)
    shutil.rmtree(tmp_path / "lexical")
    write(tmp_path, 0, 1)  # rebuilt in 15 pages of 20: committed every 3 pages, the last time by the build itself
    engine = EmbeddedEngine(tmp_path)
    try:
        record = engine._store.index("idx")
        assert record is not None
        folder = lexical_folders.folder_for(tmp_path, record.id, Layout(record.schema))
        assert not lexical.LexicalIndex(folder, Layout(record.schema), writer=False).fresh
    finally:
        engine.close()
    assert answers_like_the_database(tmp_path) == 300


def _owners(root: Path) -> set[int]:
    """The index ids that files in ``lexical/`` and ``vectors/`` belong to."""
    return {
        int(path.name.split("-")[0].split(".")[0])
        for folder in ("lexical", "vectors")
        for path in root.glob(f"{folder}/*")
    }


def test_the_files_of_an_index_whose_deletion_was_killed_go_with_the_next_writer(tmp_path: Path) -> None:
    write(tmp_path, 0, 50, index="gone")
    write(tmp_path, 0, 50)
    write(tmp_path, 0, 0, index="gone", kill="deleting")
    assert _owners(tmp_path) == {1, 2}  # "gone" is index 1: its files stay behind
    write(tmp_path, 50, 1)
    assert _owners(tmp_path) == {2}
    assert answers_like_the_database(tmp_path) == 51
