"""A search of an index whose full-text index or graph must be built whole from the database, or whose graphs
lack many changes: callers under a deadline are told at once what is being done, others wait for it; closing
waits for the work under way."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine, builds
from tests.support.guard import holding_the_guard

DOCUMENTS = 400
MATCH = {"size": 1000, "_source": False, "query": {"match": {"body": "common"}}}
MAPPING = {
    "properties": {
        "body": {"type": "text"},
        "vector": {"type": "knn_vector", "dimension": 4, "method": {"name": "hnsw", "space_type": "cosinesimil"}},
    }
}


def _written(root: Path) -> None:
    engine = EmbeddedEngine(root)
    try:
        engine.create_index("idx", {"mappings": MAPPING})
        actions = [
            BulkAction("index", f"d{i}", {"body": f"common word{i}", "vector": [1.0, i % 7, i % 5, 1.0]})
            for i in range(DOCUMENTS)
        ]
        assert not engine.bulk("idx", actions).failed
    finally:
        engine.close()


@pytest.fixture
def unbuilt(tmp_path: Path) -> Path:
    """A data directory whose index has lost its full-text index and its graph: both are built whole again."""
    _written(tmp_path)
    shutil.rmtree(tmp_path / "lexical")
    for graph in (tmp_path / "vectors").glob("*.usearch"):
        graph.unlink()
    return tmp_path


@pytest.fixture
def engine(unbuilt: Path) -> Iterator[EmbeddedEngine]:
    opened = EmbeddedEngine(unbuilt)
    try:
        yield opened
    finally:
        opened.close()


def _every_document(found_ids: list[str]) -> bool:
    return sorted(found_ids) == sorted(f"d{i}" for i in range(DOCUMENTS))


def test_a_search_without_a_deadline_waits_for_the_build_and_answers_from_it(engine: EmbeddedEngine) -> None:
    found = engine.search("idx", MATCH)
    assert found.total == DOCUMENTS and _every_document([hit.id for hit in found.hits])
    knn = engine.search("idx", {"size": 3, "query": {"knn": {"vector": {"vector": [1.0, 0.0, 0.0, 1.0], "k": 3}}}})
    assert [hit.id for hit in knn.hits][:1] == ["d0"]


def test_searches_under_a_deadline_are_told_what_is_being_built_while_it_goes_on(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(builds, "PATIENCE_S", 0.05)
    shared = engine._shared
    shared._guard.acquire()  # the build cannot start until released: it is "under way" for as long as we like
    try:
        with pytest.raises(errors.IndexUnavailable) as first:
            engine.search("idx", MATCH, patience_s=0.05)
        message = str(first.value)
        assert first.value.status == 503
        assert message.endswith(
            "index [idx] is not ready: the embedded engine is building its full-text index and the graph of "
            f"[vector] from its database, {DOCUMENTS} documents (0 s so far); searches of it answer once that is done"
        )
        with pytest.raises(errors.IndexUnavailable, match="is not ready"):  # the same build, not a second one
            asyncio.run(AsyncEmbeddedEngine(engine=engine).search("idx", MATCH))
    finally:
        shared._guard.release()
    found = engine.search("idx", MATCH, patience_s=30.0)
    assert found.total == DOCUMENTS and _every_document([hit.id for hit in found.hits])
    assert engine.search("idx", MATCH, patience_s=0.0).total == DOCUMENTS  # built: nothing to wait for


def test_a_call_without_a_deadline_says_what_it_waits_for_once_that_takes_longer_than_a_search_waits(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Ingest, export, graph stats and the other commands that read wait for the build to the end: minutes at a
    # million chunks (an upgraded data directory's first open), which they spent saying nothing.
    monkeypatch.setattr(builds, "PATIENCE_S", 0.05)
    with holding_the_guard(engine) as release, caplog.at_level(logging.WARNING):
        threading.Timer(0.5, release.set).start()  # the build can start half a second from now
        found = engine.search("idx", MATCH)
    assert found.total == DOCUMENTS
    assert [record.getMessage() for record in caplog.records] == [
        "index [idx]: the embedded engine is building its full-text index and the graph of [vector] from its "
        f"database, {DOCUMENTS} documents; waiting for it"
    ]


def test_a_write_that_waits_for_its_index_to_be_built_whole_says_so_too(
    unbuilt: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The first write to an upgraded data directory (esbridge import, the sidecar's upserts) built everything
    # before it returned, in silence.
    engine = EmbeddedEngine(unbuilt)
    try:
        with caplog.at_level(logging.WARNING):
            monkeypatch.setattr(builds, "PATIENCE_S", 0.0)
            assert not engine.bulk("idx", [BulkAction("index", "n0", {"body": "common"})]).failed
        assert [record.getMessage() for record in caplog.records] == [
            "index [idx]: the embedded engine is building its full-text index and the graph of [vector] from its "
            f"database, {DOCUMENTS + 1} documents; waiting for it"
        ]
        monkeypatch.undo()
        assert not engine.bulk("idx", [BulkAction("index", "n1", {"body": "common"})]).failed
        assert engine.search("idx", MATCH).total == DOCUMENTS + 2
    finally:
        engine.close()


def test_a_build_already_reported_to_a_search_is_not_reported_again_by_a_caller_that_waits_for_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(builds, "PATIENCE_S", 0.05)
    pool = builds.Builds()
    release = threading.Event()
    try:
        with pytest.raises(builds.Building):
            pool.run(1, "idx", "building", lambda: release.wait(10) and "built", patience_s=0.0)
        threading.Timer(0.3, release.set).start()
        with caplog.at_level(logging.WARNING):
            assert pool.run(1, "idx", "building", lambda: "another", patience_s=None) == "built"
        assert pool.run(2, "other", "building", lambda: "quick", patience_s=None) == "quick"
    finally:
        release.set()
        pool.close()
    assert not caplog.records


def test_closing_waits_for_the_build_so_the_next_process_finds_it_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(The full-text index: a process that only searches keeps the graph it builds in memory, and the next
    writer saves it.)"""
    _written(tmp_path)
    shutil.rmtree(tmp_path / "lexical")
    unbuilt = tmp_path
    engine = EmbeddedEngine(unbuilt)
    with holding_the_guard(engine) as release:  # the build starts only once closing has begun to wait for it
        with pytest.raises(errors.IndexUnavailable):
            engine.search("idx", MATCH, patience_s=0.0)
        threading.Timer(0.2, release.set).start()
        engine.close()
    assert "waiting for the embedded engine to finish building its full-text index from its database" in caplog.text
    reopened = EmbeddedEngine(unbuilt)
    try:
        record = reopened._store.index("idx")
        assert record is not None
        assert builds.slow_work(unbuilt, reopened._store.db, record, None, {}) is None  # nothing left to build
        assert reopened.search("idx", MATCH, patience_s=0.0).total == DOCUMENTS
    finally:
        reopened.close()


def test_an_index_that_only_has_changes_to_apply_is_not_built_whole(tmp_path: Path) -> None:
    _written(tmp_path)
    engine = EmbeddedEngine(tmp_path)
    try:
        record = engine._store.index("idx")
        assert record is not None
        assert builds.slow_work(tmp_path, engine._store.db, record, None, {}) is None
        assert engine.search("idx", MATCH, patience_s=0.0).total == DOCUMENTS
    finally:
        engine.close()


_KILLED_WRITER = """
import os, sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
actions = [BulkAction("index", f"n{i}", {"body": f"common new{i}", "vector": [0.0, 1.0, i, 1.0]}) for i in range(300)]
assert not engine.bulk("idx", actions).failed
os._exit(0)  # before closing: its graph changes are in the log only, not in the graph's file
"""


def test_a_search_is_told_when_its_graphs_lack_many_changes_another_process_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _written(tmp_path)
    done = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    monkeypatch.setattr(builds, "BEHIND", 200)
    engine = EmbeddedEngine(tmp_path)
    with holding_the_guard(engine), pytest.raises(errors.IndexUnavailable, match=r"applying 300 changes to its graphs"):
        engine.search("idx", MATCH, patience_s=0.05)
    try:
        found = engine.search("idx", {**MATCH, "query": {"match": {"body": "new7"}}}, patience_s=30.0)
        assert [hit.id for hit in found.hits] == ["n7"]
        assert engine.count("idx") == DOCUMENTS + 300
    finally:
        engine.close()


def test_a_build_that_ended_while_nobody_waited_serves_no_later_catch_up() -> None:
    """The searches that started it were told the index was being built and went away; the next slow catch-up
    (another mapping change, another large ingest) must run, not get the first one's result."""
    pool = builds.Builds()
    release = threading.Event()
    try:
        with pytest.raises(builds.Building):
            pool.run(1, "idx", "building", lambda: release.wait(10) and "first", patience_s=0.0)
        release.set()
        time.sleep(0.1)  # the first build ends with nobody waiting for it
        assert pool.run(1, "idx", "building", lambda: "second", patience_s=5.0) == "second"
    finally:
        release.set()
        pool.close()
