"""The embedded engine runs a bounded number of searches at once; the others wait their turn and answer as usual,
and a search waiting for an index to be built holds no turn."""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded import engine as engine_module
from esbridge.engines.embedded.query import Searcher

MAPPING = {"properties": {"body": {"type": "text"}}}


def _written(root: Path, *indices: str) -> None:
    engine = EmbeddedEngine(root)
    try:
        for index in indices:
            engine.create_index(index, {"mappings": MAPPING})
            actions = [BulkAction("index", f"d{i}", {"body": f"common word{i}"}) for i in range(20)]
            assert not engine.bulk(index, actions).failed
    finally:
        engine.close()


def _match(word: str) -> dict[str, Any]:
    return {"size": 5, "query": {"match": {"body": word}}}


class _Overlap:
    """Counts the searches running inside the engine at once, each held a little so that overlaps show."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold_s: float) -> None:
        self.running = self.most = 0
        self._lock = threading.Lock()
        real = Searcher.run

        def run(searcher: Searcher, body: Any) -> Any:
            with self._lock:
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                time.sleep(hold_s)
                return real(searcher, body)
            finally:
                with self._lock:
                    self.running -= 1

        monkeypatch.setattr(Searcher, "run", run)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _written(tmp_path, "idx")
    return tmp_path


@pytest.mark.parametrize("bound", [1, 2, 3])
def test_no_more_searches_run_at_once_than_the_bound_and_every_one_answers(
    root: Path, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    overlap = _Overlap(monkeypatch, hold_s=0.05)
    engine = EmbeddedEngine(root, searches_at_once=bound)
    try:
        with ThreadPoolExecutor(6) as pool:
            found = list(pool.map(lambda i: engine.search("idx", _match(f"word{i}")), range(12)))
    finally:
        engine.close()

    assert overlap.most == bound  # never more, and as many as allowed
    assert [[hit.id for hit in result.hits] for result in found] == [[f"d{i}"] for i in range(12)]


def test_the_default_bound_lets_several_searches_run_at_once(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "default_searches_at_once", lambda: 2)
    overlap = _Overlap(monkeypatch, hold_s=0.05)
    engine = EmbeddedEngine(root)
    try:
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda i: engine.search("idx", _match(f"word{i}")), range(12)))
    finally:
        engine.close()

    assert overlap.most == 2


def test_the_default_bound_follows_the_cores_the_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert engine_module.default_searches_at_once() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert engine_module.default_searches_at_once() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    assert engine_module.default_searches_at_once() == 25


@pytest.mark.parametrize("bound", [0, -1, True, 2.5, "2"])
def test_a_bound_that_is_not_a_whole_number_of_at_least_one_is_refused(tmp_path: Path, bound: Any) -> None:
    with pytest.raises(ValueError, match=f"searches_at_once must be a whole number of at least 1, not {bound!r}"):
        EmbeddedEngine(tmp_path, searches_at_once=bound)
    assert not (tmp_path / "esbridge.sqlite3").exists()  # refused before anything was opened


@pytest.fixture
def one_unbuilt(tmp_path: Path) -> Path:
    """Two indices whose full-text indices are gone: the next search of each waits for its own to be built."""
    _written(tmp_path, "unbuilt", "built")
    shutil.rmtree(tmp_path / "lexical")
    return tmp_path


def test_a_search_waiting_for_a_build_holds_no_turn(one_unbuilt: Path) -> None:
    engine = EmbeddedEngine(one_unbuilt, searches_at_once=1)
    found: dict[str, Any] = {}

    def search(index: str, word: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: found.update({index: engine.search(index, _match(word))}))
        thread.start()
        return thread

    try:
        engine.search("built", _match("word1"))  # its own full-text index built first
        shared = engine._shared
        shared._guard.acquire()  # the other index's build cannot start until released
        try:
            waiting = search("unbuilt", "word2")
            time.sleep(0.2)
            assert waiting.is_alive()  # waiting for the build
            search("built", "word3").join(10)
            answered_meanwhile = "built" in found
        finally:
            shared._guard.release()
        waiting.join(30)
    finally:
        engine.close()

    assert answered_meanwhile  # not held up behind the search that waits for the build
    assert [hit.id for hit in found["built"].hits] == ["d3"]
    assert [hit.id for hit in found["unbuilt"].hits] == ["d2"]
