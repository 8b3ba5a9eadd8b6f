"""The embedded engine's search structures: tantivy BM25 (hand-computed), usearch graphs kept current by
writes and persisted, filtered and exact kNN, crash recovery, one writer process, concurrent searches."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann, store
from esbridge.engines.embedded.datadir import DataDir
from esbridge.engines.embedded.lexical import COMMIT_AFTER_S
from esbridge.errors import EngineUnavailable

DIMENSION = 8


def mapping(*, approximate: bool) -> dict[str, Any]:
    settings = {"index": {"knn": True}} if approximate else {}
    return {
        "settings": settings,
        "mappings": {
            "properties": {
                "title": {"type": "text", "analyzer": "english"},
                "body": {"type": "text", "analyzer": "english"},
                "tag": {"type": "keyword"},
                "n": {"type": "integer"},
                "v": {"type": "knn_vector", "dimension": DIMENSION, "method": {"space_type": "cosinesimil"}},
            }
        },
    }


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def points(count: int, seed: int = 0) -> np.ndarray[Any, np.dtype[np.float32]]:
    rng = np.random.default_rng(seed)
    found: np.ndarray[Any, np.dtype[np.float32]] = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    return found


def load(engine: EmbeddedEngine, index: str, vectors: np.ndarray[Any, Any], prefix: str = "d") -> None:
    actions = [
        BulkAction("index", f"{prefix}{i}", {"tag": "rare" if i % 50 == 0 else "common", "n": i, "v": v.tolist()})
        for i, v in enumerate(vectors)
    ]
    for start in range(0, len(actions), 200):
        assert not engine.bulk(index, actions[start : start + 200]).failed


def knn(vector: Any, k: int, **extra: Any) -> dict[str, Any]:
    return {"size": k, "query": {"knn": {"v": {"vector": [float(x) for x in vector], "k": k, **extra}}}}


def exact_top(vectors: np.ndarray[Any, Any], query: np.ndarray[Any, Any], k: int, allowed: list[int]) -> list[str]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = unit[allowed] @ (query / np.linalg.norm(query))
    return [f"d{allowed[i]}" for i in np.argsort(-similarity, kind="stable")[:k]]


def test_bm25_is_lucene_bm25_at_tantivy_k1_and_b(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", mapping(approximate=False))
    texts = ["apple banana", "apple apple cherry date", "cherry"]
    engine.bulk("idx", [BulkAction("index", f"t{i}", {"body": text}) for i, text in enumerate(texts)])
    found = {hit.id: hit.score for hit in engine.search("idx", {"query": {"match": {"body": "apple"}}}).hits}
    # idf = ln(1 + (N - n + 0.5) / (n + 0.5)); tf part = tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    average = 7 / 3
    for doc, tf, length in (("t0", 1, 2), ("t1", 2, 4)):
        expected = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / average))
        assert found[doc] == pytest.approx(expected, rel=1e-4)
    assert set(found) == {"t0", "t1"}


def test_a_field_boost_multiplies_that_fields_score_and_stemming_matches_word_forms(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", mapping(approximate=False))
    engine.bulk("idx", [BulkAction("index", "a", {"title": "Running studies", "body": "nothing here"})])
    plain = engine.search("idx", {"query": {"multi_match": {"query": "run study", "fields": ["title"]}}}).hits
    boosted = engine.search("idx", {"query": {"multi_match": {"query": "runs studied", "fields": ["title^3"]}}}).hits
    assert [hit.id for hit in plain] == ["a"]
    assert boosted[0].score == pytest.approx(3 * plain[0].score, rel=1e-5)


def test_filters_run_inside_the_text_search_and_count_only_what_passes(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", mapping(approximate=False))
    engine.bulk("idx", [BulkAction("index", f"d{i}", {"body": "common words", "n": i, "tag": f"t{i % 3}"})
                        for i in range(30)])  # fmt: skip
    body = {
        "size": 5,
        "query": {"bool": {"must": [{"match": {"body": "words"}}], "filter": [{"term": {"tag": "t1"}}],
                           "must_not": [{"range": {"n": {"gte": 20}}}]}},
    }  # fmt: skip
    result = engine.search("idx", body)
    assert result.total == len([i for i in range(20) if i % 3 == 1])
    assert all(int(hit.id[1:]) % 3 == 1 and int(hit.id[1:]) < 20 for hit in result.hits)


@pytest.mark.parametrize("approximate", [False, True])
def test_knn_on_an_index_without_vectors_finds_nothing(engine: EmbeddedEngine, approximate: bool) -> None:
    engine.create_index("idx", mapping(approximate=approximate))
    assert engine.search("idx", knn(points(1)[0], 10)).hits == []
    assert engine.search("idx", knn(points(1)[0], 3, filter={"term": {"tag": "rare"}})).hits == []


def test_exact_knn_without_index_knn_matches_brute_force_under_any_filter(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", mapping(approximate=False))
    vectors = points(300)
    load(engine, "idx", vectors)
    query = points(1, seed=5)[0]
    hits = engine.search("idx", knn(query, 10)).hits
    assert [hit.id for hit in hits] == exact_top(vectors, query, 10, list(range(300)))
    filtered = engine.search("idx", knn(query, 5, filter={"term": {"tag": "rare"}})).hits
    assert [hit.id for hit in filtered] == exact_top(vectors, query, 5, list(range(0, 300, 50)))


def test_the_graph_returns_k_under_selective_and_broad_filters(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)  # so that a small index uses its graph
    engine.create_index("idx", mapping(approximate=True))
    vectors = points(1000)
    load(engine, "idx", vectors)
    query = points(1, seed=9)[0]
    rare = engine.search("idx", knn(query, 10, filter={"term": {"tag": "rare"}})).hits
    assert [hit.id for hit in rare] == exact_top(vectors, query, 10, list(range(0, 1000, 50)))
    broad = engine.search("idx", knn(query, 10, filter={"range": {"n": {"lt": 400}}})).hits
    assert len(broad) == 10
    assert all(int(hit.id[1:]) < 400 for hit in broad)
    truth = set(exact_top(vectors, query, 10, list(range(400))))
    assert len(truth & {hit.id for hit in broad}) >= 8
    unfiltered = {hit.id for hit in engine.search("idx", knn(query, 10)).hits}
    assert len(unfiltered & set(exact_top(vectors, query, 10, list(range(1000))))) >= 8


@pytest.mark.parametrize("approximate", [False, True])
def test_knn_ranks_and_scores_by_the_stored_float_vectors_not_the_graphs_compact_copy(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch, approximate: bool
) -> None:
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)  # so that the approximate index uses its graph
    engine.create_index("idx", mapping(approximate=approximate))
    query = points(1, seed=4)[0]
    # Near-duplicates of the query, apart by less than an int8 (or bfloat16) step per dimension: only the
    # float32 vectors order them. Nearest first: d0, d1, ..., d9; then 200 others.
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(DIMENSION).astype(np.float32)
    close = np.stack([query + (i + 1) * 1e-3 * direction for i in range(10)])
    vectors = np.concatenate([close, points(200, seed=8)])
    load(engine, "idx", vectors)
    hits = engine.search("idx", knn(query, 10)).hits
    assert [hit.id for hit in hits] == exact_top(vectors, query, 10, list(range(210)))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for hit in hits:
        cosine = float(unit[int(hit.id[1:])] @ (query / np.linalg.norm(query)))
        assert hit.score == pytest.approx((1 + cosine) / 2, abs=1e-6)
    assert [hit.id for hit in hits] == [f"d{i}" for i in range(10)]


def test_writes_update_the_graph_in_place_and_a_reopen_loads_it_from_its_file(tmp_path: Path) -> None:
    engine = EmbeddedEngine(tmp_path)
    engine.create_index("idx", mapping(approximate=True))
    load(engine, "idx", points(200))
    shared: DataDir = engine._shared
    graph = next(iter(shared._handles.values())).vectors["v"]
    engine.bulk("idx", [BulkAction("index", "new", {"v": [1.0] * DIMENSION})])
    handles = next(iter(shared._handles.values()))
    assert handles.vectors["v"] is graph, "no reload on write"
    handles.settle()  # the graph grows in the worker thread after the write returns
    assert len(graph) == 201
    engine.bulk("idx", [BulkAction("delete", "new")])
    handles.settle()
    assert len(graph) == 200
    assert "new" not in {hit.id for hit in engine.search("idx", knn([1.0] * DIMENSION, 3)).hits}
    engine.close()
    files = list((tmp_path / "vectors").glob("*.usearch"))
    assert len(files) == 1
    reopened = EmbeddedEngine(tmp_path)
    try:
        reopened.count("idx")
        assert reopened.search("idx", knn(points(1, seed=3)[0], 5)).total == 5
        loaded = next(iter(reopened._shared._handles.values())).vectors["v"]
        assert (loaded.built, loaded.saved, len(loaded)) == (True, loaded.applied, 200)
    finally:
        reopened.close()


def test_re_scoring_uses_the_float_copies_only_where_they_agree_with_the_graph(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)
    engine.create_index("idx", mapping(approximate=True))
    vectors = points(300)
    load(engine, "idx", vectors)
    query = points(1, seed=12)[0]
    expected = exact_top(vectors, query, 10, list(range(300)))
    graph = next(iter(engine._shared._handles.values())).vectors["v"]
    assert graph.copies.path.exists()
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def answer() -> list[tuple[str, float]]:
        return [(hit.id, hit.score) for hit in engine.search("idx", knn(query, 10)).hits]

    right = answer()
    assert [doc for doc, _ in right] == expected
    for doc, score in right:
        assert score == pytest.approx((1 + float(unit[int(doc[1:])] @ (query / np.linalg.norm(query)))) / 2, abs=1e-6)
    # Wrong copies (the nearest rows' vectors pointing away from the query) are noticed and read from the database.
    record = engine._store.index("idx")
    assert record is not None
    rows = sorted(engine._store.document_row(record.id, doc) or 0 for doc, _ in right)
    graph.copies.write(rows, -np.ones((len(rows), DIMENSION), dtype=np.float32))
    assert answer() == right
    graph.copies.path.unlink()  # no copies at all (a data directory from before them): the database alone
    assert answer() == right


def test_a_graph_file_written_with_bfloat16_vectors_is_loaded_and_searched_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)
    with monkeypatch.context() as earlier:  # how the previous release built its graphs
        earlier.setattr(ann, "DTYPE", "bf16")
        earlier.setattr(ann, "CONNECTIVITY", 16)
        engine = EmbeddedEngine(tmp_path)
        engine.create_index("idx", mapping(approximate=True))
        vectors = points(300)
        load(engine, "idx", vectors)
        engine.close()
    reopened = EmbeddedEngine(tmp_path)
    try:
        query = points(1, seed=6)[0]
        hits = reopened.search("idx", knn(query, 5)).hits
        graph = next(iter(reopened._shared._handles.values())).vectors["v"]
        assert (str(graph.graph.dtype), len(graph)) == ("ScalarKind.BF16", 300), "loaded, not rebuilt"
        assert [hit.id for hit in hits] == exact_top(vectors, query, 5, list(range(300)))
        reopened.bulk("idx", [BulkAction("index", "new", {"v": query.tolist()})])
        assert reopened.search("idx", knn(query, 1)).hits[0].id == "new"
    finally:
        reopened.close()


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
