"""The embedded engine's search structures: tantivy BM25 (hand-computed), usearch graphs kept current by
writes and persisted, filtered and exact kNN, re-scoring from the float copies (processes and concurrency:
test_embedded_processes.py)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine, ann
from esbridge.engines.embedded.datadir import DataDir
from tests.support.embedded_index import DIMENSION, knn, load, mapping, points


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


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


def test_a_filter_of_exclusions_that_leaves_few_rows_is_met_by_the_rows_it_keeps(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kNN whose filter only excludes (``must_not``) but excludes most rows, such as the request for the entity
    types ``knn_per_type`` does not list: the few rows left are scanned, not the graph widened past every row."""
    monkeypatch.setattr(ann, "EXACT_BELOW", 20)  # so that a small index uses its graph
    engine.create_index("idx", mapping(approximate=True))
    vectors = points(1000)
    load(engine, "idx", vectors)
    query = points(1, seed=3)[0]
    few = {"bool": {"must_not": [{"terms": {"tag": ["common"]}}]}}
    hits = engine.search("idx", knn(query, 10, filter=few)).hits
    assert [hit.id for hit in hits] == exact_top(vectors, query, 10, list(range(0, 1000, 50)))
    none = {"bool": {"must_not": [{"terms": {"tag": ["common", "rare"]}}]}}
    assert engine.search("idx", knn(query, 10, filter=none)).hits == []
    held = list(engine._shared._filters.values())
    # each filter is held as the rows that pass it (20, then none), not as the rows it excludes
    assert sorted((len(allowed or ()), len(excluded)) for allowed, excluded in held) == [(0, 0), (20, 0)]
