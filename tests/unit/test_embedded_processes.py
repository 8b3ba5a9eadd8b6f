"""The embedded engine across processes and threads: a writer killed mid-ingest, one writer process at a time,
searches beside a writer, rebuilds, the write-ahead log."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann, store
from esbridge.engines.embedded.lexical import COMMIT_AFTER_S
from esbridge.engines.embedded.writer import LOCK_FILE, WriterBusy, WriterLock
from esbridge.errors import EngineUnavailable
from tests.support.embedded_index import knn, load, mapping, points


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


_WRITER = """
import sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, datadir
datadir.SAVE_EVERY = 300  # graphs saved (and the change log trimmed) while the writer runs
engine = EmbeddedEngine(sys.argv[1])
if not engine.index_exists("crash"):
    engine.create_index("crash", {"settings": {"index": {"knn": True}}, "mappings": {"properties": {
        "text": {"type": "text", "analyzer": "english"},
        "v": {"type": "knn_vector", "dimension": 4, "method": {"space_type": "cosinesimil"}}}}})
for batch in range(int(sys.argv[2])):
    engine.bulk("crash", [BulkAction("index", f"{batch}-{i}", {"text": f"words about item{batch}x{i}",
                                     "v": [1.0, batch + 1.0, i + 1.0, 0.5]}) for i in range(100)])
    print(batch, flush=True)
engine.close()
"""


def test_a_writer_killed_mid_ingest_leaves_an_index_that_answers_and_converges_on_a_rerun(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "1000"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    for _ in range(8):
        writer.stdout.readline()
    writer.kill()  # SIGKILL: tantivy, the graph file and the database may each be at a different point
    writer.wait()
    writer.stdout.close()
    engine = EmbeddedEngine(tmp_path)
    try:
        count = engine.count("crash")
        assert count >= 800
        assert count % 100 == 0
        assert engine.search("crash", {"size": 0, "query": {"match": {"text": "words"}}}).total == count
        assert engine.search("crash", knn([1.0, 1.0, 1.0, 0.5], 3)).total == 3
    finally:
        engine.close()
    rerun = subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path), "12"], capture_output=True, check=False)
    assert rerun.returncode == 0, rerun.stderr
    engine = EmbeddedEngine(tmp_path)
    try:
        count = engine.count("crash")
        assert count >= 1200
        assert engine.search("crash", {"size": 0, "query": {"match": {"text": "words"}}}).total == count
        assert engine.search("crash", {"query": {"match": {"text": "item11x7"}}}).hits[0].id == "11-7"
        nearest = engine.search("crash", knn([1.0, 12.0, 8.0, 0.5], 1)).hits
        assert nearest[0].id == "11-7"
    finally:
        engine.close()


_HOLDER = """
import sys
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine.bulk("idx", [BulkAction("index", "theirs", {"body": "written by the other process"})])
print("holding", flush=True)
sys.stdin.readline()
engine.close()
"""


def test_a_second_process_cannot_write_but_can_read_and_writes_once_the_first_closes(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    engine.create_index("idx", mapping(approximate=False))
    engine.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        second = EmbeddedEngine(tmp_path)
        with pytest.raises(EngineUnavailable, match=rf"written by another process \(pid {holder.pid}\)"):
            second.bulk("idx", [BulkAction("index", "mine", {"body": "mine"})])
        # The writer commits its full text within COMMIT_AFTER_S of writing; the reader sees it then.
        deadline = time.monotonic() + COMMIT_AFTER_S + 5
        while not second.search("idx", {"query": {"match": {"body": "other"}}}).hits and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [hit.id for hit in second.search("idx", {"query": {"match": {"body": "other"}}}).hits] == ["theirs"]
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    assert not second.bulk("idx", [BulkAction("index", "mine", {"body": "mine"})]).failed
    assert second.count("idx") == 2
    for word in ("other", "mine"):  # the new writer carried on from the first one's state: nothing doubled
        assert second.search("idx", {"query": {"match": {"body": word}}}).total == 1
    second.close()


def test_a_removed_lock_file_does_not_let_a_second_writer_in(tmp_path: Path) -> None:
    # writer.lock stays after its holder exits, so it can look stale; removed while a writer ran, the next process
    # locked a new file of that name and wrote beside it (then tantivy refused it with a traceback).
    first, second = WriterLock(tmp_path), WriterLock(tmp_path)  # two open file descriptions, as two processes
    first.take()
    (tmp_path / LOCK_FILE).unlink()
    with pytest.raises(WriterBusy, match=rf"the data directory {tmp_path} is being written by another process"):
        second.take()
    assert not second.held
    first.release()
    second.take()
    assert second.held
    second.release()


def test_searches_run_beside_a_writer_and_see_each_committed_write(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", mapping(approximate=True))
    load(engine, "idx", points(100))
    failures: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            try:
                assert len(engine.search("idx", knn(points(1, seed=1)[0], 5)).hits) == 5
                engine.search("idx", {"query": {"bool": {"filter": [{"term": {"tag": "common"}}]}}})
            except BaseException as exc:
                failures.append(exc)
                return

    readers = [threading.Thread(target=search) for _ in range(3)]
    for reader in readers:
        reader.start()
    for batch in range(5):
        load(engine, "idx", points(50, seed=100 + batch), prefix=f"b{batch}-")
        assert engine.count("idx") == 100 + 50 * (batch + 1)
        assert engine.search("idx", {"query": {"ids": {"values": [f"b{batch}-49"]}}}).total == 1
    stop.set()
    for reader in readers:
        reader.join()
    assert failures == []


def test_a_new_text_field_rebuilds_the_full_text_index_once_and_drops_the_old_one(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    try:
        engine.create_index("idx", mapping(approximate=False))
        engine.bulk("idx", [BulkAction("index", "a", {"body": "first words"})])
        before = sorted(path.name for path in (tmp_path / "lexical").iterdir())
        engine.put_mapping("idx", {"summary": {"type": "text", "analyzer": "english"}})
        engine.bulk("idx", [BulkAction("index", "b", {"body": "second", "summary": "summaries matter"})])
        after = sorted(path.name for path in (tmp_path / "lexical").iterdir())
        assert len(before) == len(after) == 1 and before != after
        assert [hit.id for hit in engine.search("idx", {"query": {"match": {"summary": "summary"}}}).hits] == ["b"]
        assert [hit.id for hit in engine.search("idx", {"query": {"match": {"body": "words"}}}).hits] == ["a"]
    finally:
        engine.close()


def test_a_write_is_searchable_while_the_graph_is_still_taking_it_in(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "EXACT_BELOW", 10)  # search the graph, not a brute-force scan
    engine.create_index("idx", mapping(approximate=True))
    vectors = points(300)
    load(engine, "idx", vectors)
    engine.search("idx", knn(vectors[0], 1))
    gate = threading.Event()
    engine._shared._workers.submit(gate.wait)  # the graph worker is busy: the next updates queue behind this
    try:
        target = vectors[7] + 0.001
        engine.bulk(
            "idx",
            [
                BulkAction("index", "fresh", {"tag": "rare", "n": 1000, "v": target.tolist()}),
                BulkAction("delete", "d7"),
                BulkAction("index", "d8", {"tag": "common", "n": 8, "v": (-vectors[8]).tolist()}),
            ],
        )
        handles = next(iter(engine._shared._handles.values()))
        assert handles.growing and not any(update.done() for update in handles.growing)
        assert engine.search("idx", knn(target, 2)).hits[0].id == "fresh"
        assert "d7" not in {hit.id for hit in engine.search("idx", knn(vectors[7], 5)).hits}
        moved = engine.search("idx", knn(-vectors[8], 1)).hits
        assert moved[0].id == "d8" and moved[0].score == pytest.approx(1.0, abs=1e-6)
        filtered = engine.search("idx", knn(target, 3, filter={"term": {"tag": "common"}})).hits
        assert "fresh" not in {hit.id for hit in filtered} and len(filtered) == 3
    finally:
        gate.set()
    handles.settle()
    assert [hit.id for hit in engine.search("idx", knn(target, 1)).hits] == ["fresh"]


def test_the_write_ahead_log_is_emptied_once_it_passes_its_limit(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_index("idx", mapping(approximate=True))
    load(engine, "idx", points(100))
    log = engine.data_dir / "esbridge.sqlite3-wal"
    assert log.stat().st_size > 0
    monkeypatch.setattr(store, "LOG_LIMIT", 1)
    load(engine, "idx", points(10, seed=5), prefix="more")
    assert log.stat().st_size == 0
    assert engine.count("idx") == 110
    assert engine.search("idx", knn(points(10, seed=5)[3], 1)).hits[0].id == "more3"
