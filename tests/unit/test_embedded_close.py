"""Closing the embedded engine while other threads search: it waits for them, later calls are refused, and the
process survives (closing the database under a running search crashed it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from esbridge import errors
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
from esbridge.engines.embedded.calls import Calls
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query import bodies
from esbridge.query.models import Filters

CLOSE_UNDER_SEARCHES = textwrap.dedent(
    """
    import random, sys, threading, time
    from pathlib import Path
    from esbridge.engines.base import BulkAction
    from esbridge.engines.embedded import EmbeddedEngine
    from esbridge.mappings.lifecycle import IndexManager
    from esbridge.mappings.schema import IndexParameters
    from esbridge.query import bodies
    from esbridge.query.models import Filters

    root = Path(sys.argv[1])
    rng = random.Random(1)
    words = ["solar", "panel", "inverter", "battery", "grid", "roof"]
    engine = EmbeddedEngine(root)
    IndexManager(engine, "notes", IndexParameters(dimension=8)).create()
    engine.bulk("notes", [
        BulkAction("index", f"d{i}", {"doc_id": f"d{i}", "chunk_id": f"d{i}", "title": f"note {i}",
                   "body": " ".join(rng.choice(words) for _ in range(40)), "vector": [rng.random() for _ in range(8)]})
        for i in range(3000)
    ])
    engine.close()
    seen = set()
    for _ in range(10):
        engine = EmbeddedEngine(root)
        stop = threading.Event()

        def searching():
            while not stop.is_set():
                try:
                    engine.search("notes", bodies.bm25_body("opensearch", "solar grid", size=10, filters=Filters()))
                    vector = [rng.random() for _ in range(8)]
                    body = bodies.knn_body("opensearch", vector, k=10, filters=Filters(), num_candidates=100)
                    engine.search("notes", body)
                except Exception as exc:
                    seen.add(f"{type(exc).__name__}: {exc}".split(" (")[0])
                    return

        threads = [threading.Thread(target=searching) for _ in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(0.05)
        engine.close()
        stop.set()
        for thread in threads:
            thread.join()
    print(sorted(seen))
    """
)


def test_closing_while_other_threads_search_neither_crashes_nor_leaks_raw_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_UNDER_SEARCHES, str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # (-11 was a segmentation fault)
    assert "EngineUnavailable" in done.stdout
    assert "closed" in done.stdout
    assert "RuntimeError" not in done.stdout and "EngineResponseError" not in done.stdout, done.stdout


def test_a_call_after_close_is_refused_naming_the_closed_engine(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path / "data")
    IndexManager(engine, "notes", IndexParameters(dimension=2)).create()
    engine.close()
    engine.close()  # a second close does nothing

    with pytest.raises(errors.EngineUnavailable, match="the embedded engine is closed"):
        engine.search("notes", bodies.bm25_body("opensearch", "solar", size=10, filters=Filters()))


def test_close_waits_for_the_calls_under_way_and_says_how_many_outlived_it() -> None:
    calls = Calls("embedded:///x")
    entered, release = threading.Event(), threading.Event()

    def held_call() -> None:
        with calls.call("search", "notes"), calls.call("read alias", "notes"):  # a call inside another counts once
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=held_call)
    thread.start()
    entered.wait(10)

    assert calls.close(timeout_s=0.1) == 1
    release.set()
    thread.join()
    assert calls.close(timeout_s=1) == 0
    with pytest.raises(errors.EngineUnavailable, match="closed"), calls.call("search", "notes"):
        pass


@pytest.mark.parametrize("write", ["put_mapping", "reindex"])
def test_close_waits_for_the_indices_to_catch_up_with_a_committed_write(tmp_path: Path, write: str) -> None:
    """What follows a write's commit (bringing the full-text index and graphs up to it) is counted as a call, and
    left to the next process once a close has begun. It was not counted: a close during the write closed the
    database under it, which failed the committed write with a raw SQLite error."""
    engine = EmbeddedEngine(tmp_path / "data")
    manager = IndexManager(engine, "notes", IndexParameters(dimension=2))
    manager.create()
    engine.create_index("copy", manager.wanted_body())
    engine.bulk("notes", [BulkAction("index", f"d{i}", {"chunk_id": f"d{i}", "body": "solar"}) for i in range(20)])
    shared = engine._shared
    ready, hold_writer, writing_began = shared.ready, shared.hold_writer, threading.Event()

    def ready_once_closing(*args: Any, **kwargs: Any) -> Any:
        for _ in range(500):  # until another thread's close has begun
            if engine._calls._closing:
                break
            time.sleep(0.01)
        time.sleep(0.2)
        return ready(*args, **kwargs)

    def held_when_writing_begins(store: Any) -> None:
        writing_began.set()
        hold_writer(store)

    outcome: list[object] = []

    def writing() -> None:
        try:
            if write == "put_mapping":
                engine.put_mapping("notes", {"extra": {"type": "keyword"}})
            else:
                engine.reindex("notes", "copy")
            outcome.append("done")
        except Exception as exc:  # (what escapes is the finding)
            outcome.append(exc)

    shared.ready = ready_once_closing  # type: ignore[method-assign]
    shared.hold_writer = held_when_writing_begins  # type: ignore[method-assign]
    thread = threading.Thread(target=writing)
    thread.start()
    writing_began.wait(10)
    engine.close()
    thread.join(30)

    assert outcome == ["done"]
    reopened = EmbeddedEngine(tmp_path / "data")
    try:
        assert reopened.count("copy" if write == "reindex" else "notes") == 20
        if write == "put_mapping":
            assert "extra" in reopened.get_mapping("notes")["properties"]
    finally:
        reopened.close()


def test_work_after_a_commit_counts_as_a_call_and_is_skipped_once_a_close_has_begun() -> None:
    calls = Calls("embedded:///x")
    under_way: list[int] = []
    calls.after_commit("bulk write", "notes", lambda: under_way.append(calls.close(timeout_s=0.05)))
    assert under_way == [1]  # the close found the step running

    skipped: list[str] = []
    calls.after_commit("bulk write", "notes", lambda: skipped.append("ran"))  # no error: the write stands
    assert skipped == []
