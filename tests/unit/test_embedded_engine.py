"""What only the embedded engine has to show: crash safety, its DSL boundary, persistence, and esbridge's
own ingest and hybrid search running on it unchanged. The engine contract is in tests/contract."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esbridge.config import Settings
from esbridge.engines.analysis import analysis
from esbridge.engines.base import AsyncEngine, BulkAction, Engine
from esbridge.engines.embedded import AsyncEmbeddedEngine, EmbeddedEngine
from esbridge.engines.embedded.analysis import field_analysis
from esbridge.engines.embedded.lexical import LexicalIndex
from esbridge.engines.embedded.store import DB_FILE, Store
from esbridge.errors import EngineResponseError, IndexAlreadyExists, IndexNotFound, RequestRejected
from esbridge.ingest.run import IngestOptions, ingest
from esbridge.mappings.lifecycle import IndexManager
from esbridge.mappings.schema import IndexParameters
from esbridge.query.models import Filters, SearchRequest
from esbridge.query.orchestrator import HybridSearcher
from tests.integration.engines import load_records
from tests.support.hashing import RECORDS, HashingEmbedder

BODY = {"mappings": {"properties": {"n": {"type": "integer"}, "text": {"type": "text"}, "v": {
    "type": "knn_vector", "dimension": 2, "method": {"name": "hnsw", "space_type": "cosinesimil"}}}}}  # fmt: skip


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[EmbeddedEngine]:
    engine = EmbeddedEngine(tmp_path / "data")
    yield engine
    engine.close()


def docs(prefix: str, count: int, **fields: Any) -> list[BulkAction]:
    return [BulkAction("index", f"{prefix}{i}", {"n": i, "text": f"word{i} shared", **fields}) for i in range(count)]


def test_it_is_an_engine_and_an_async_engine(engine: EmbeddedEngine) -> None:
    assert isinstance(engine, Engine)
    assert isinstance(AsyncEmbeddedEngine(engine=engine), AsyncEngine)
    capabilities = engine.probe()
    assert (capabilities.distribution, capabilities.knn, engine.dialect) == ("embedded", True, "opensearch")
    assert not any(capabilities.native_hybrid.values())
    assert capabilities.cluster_name == "embedded"
    assert not capabilities.plugins["tantivy"].startswith("tantivy")
    assert "the index's b" in capabilities.notes[0] and "b=0.75" not in capabilities.notes[0]


def test_a_bulk_that_fails_midway_leaves_nothing_half_written(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_index("crash", BODY)
    engine.bulk("crash", docs("before", 3))
    real = Store.put_documents

    def failing(self: Store, record: Any, schema: Any, documents: Any) -> None:
        real(self, record, schema, documents[:2])  # two documents written, then the disk fails
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "put_documents", failing)
    with pytest.raises(EngineResponseError, match="disk I/O error"):
        engine.bulk("crash", docs("during", 5))
    monkeypatch.undo()
    assert engine.count("crash") == 3
    found = engine.search("crash", {"query": {"match": {"text": "shared"}}, "size": 20})
    assert sorted(hit.id for hit in found.hits) == ["before0", "before1", "before2"]


_WRITER = """
import sys
from esbridge.config import Settings
from esbridge.engines.base import BulkAction
from esbridge.engines.embedded import EmbeddedEngine
engine = EmbeddedEngine(sys.argv[1])
engine.create_index("crash", {"mappings": {"properties": {"n": {"type": "integer"}, "text": {"type": "text"}}}})
batch = 0
while True:
    engine.bulk("crash", [BulkAction("index", f"{batch}-{i}", {"n": batch, "text": "word " * 40}) for i in range(200)])
    batch += 1
    print(batch, flush=True)
"""


def test_a_killed_writer_leaves_a_readable_database_of_whole_bulks(tmp_path: Path) -> None:
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    for _ in range(3):
        writer.stdout.readline()
    writer.kill()  # SIGKILL: no cleanup, most likely in the middle of the next bulk
    writer.wait()
    writer.stdout.close()
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    engine = EmbeddedEngine(tmp_path)
    try:
        count = engine.count("crash")
        assert count >= 600
        assert count % 200 == 0
        assert engine.search("crash", {"size": 0, "query": {"match": {"text": "word"}}}).total == count
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"query": {"hybrid": {"queries": []}}}, "hybrid"),
        ({"query": {"match_phrase": {"text": "a b"}}}, "match_phrase"),
        ({"query": {"match_all": {}}, "aggs": {"n": {"terms": {"field": "n"}}}}, "aggs"),
        ({"knn": {"field": "v", "query_vector": [1, 0], "k": 1}}, "knn"),
        ({"query": {"range": {"n": {"gte": 1, "format": "x"}}}}, "format"),
        ({"query": {"multi_match": {"query": "a", "fields": ["te*"]}}}, "te*"),
        ({"query": {"multi_match": {"query": "a", "fields": ["text"], "type": "phrase"}}}, "phrase"),
        ({"query": {"knn": {"v": {"vector": [1, 0, 0], "k": 1}}}}, "2 numbers"),
        (
            {"query": {"bool": {"should": [{"term": {"n": 1}}], "minimum_should_match": "2<75%"}}},
            "minimum_should_match",
        ),
    ],
)
def test_what_is_outside_the_subset_is_rejected_by_name(
    engine: EmbeddedEngine, body: dict[str, Any], named: str
) -> None:
    engine.create_index("idx", BODY)
    with pytest.raises(RequestRejected, match=re.escape(named)):
        engine.search("idx", body)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"query": {"bool": None}}, "bool needs an object"),
        ({"query": {"match_all": {"boost": "x"}}}, "boost must be a number"),
        ({"query": {"terms": {"n": [1], "boost": [2]}}}, "boost must be a number"),
        ({"query": {"multi_match": {"query": "a", "fields": ["text^x"]}}}, "the boost of field [text]"),
        ({"query": {"multi_match": {"query": "a", "fields": ["text"], "tie_breaker": "a"}}}, "tie_breaker"),
        ({"query": {"match_all": {}}, "sort": ["n"], "search_after": [{"n": 1}]}, "search_after"),
        ({"query": {"bool": {"filter": [{"exists": {"field": "text"}}, {"range": {"at": {"gte": 1e300}}}]}}}, "1e+300"),
    ],
)
def test_a_malformed_request_is_rejected_naming_what_is_wrong(
    engine: EmbeddedEngine, body: dict[str, Any], named: str
) -> None:
    engine.create_index("idx", {"mappings": {"properties": {**BODY["mappings"]["properties"], "at": {"type": "date"}}}})
    engine.bulk("idx", docs("d", 2, at="2024-05-01"))
    engine.refresh("idx")
    with pytest.raises(RequestRejected, match=re.escape(named)):
        engine.search("idx", body)


def test_date_math_is_rejected(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", {"mappings": {"properties": {"at": {"type": "date"}}}})
    with pytest.raises(RequestRejected, match="date math"):
        engine.search("idx", {"query": {"range": {"at": {"gte": "now-1d"}}}})


def test_unsupported_mappings_are_rejected_at_creation(engine: EmbeddedEngine) -> None:
    with pytest.raises(RequestRejected, match="geo_point"):
        engine.create_index("idx", {"mappings": {"properties": {"where": {"type": "geo_point"}}}})
    with pytest.raises(RequestRejected, match="l2"):
        engine.create_index("idx", {"mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 2}}}})
    with pytest.raises(RequestRejected, match="french"):
        engine.create_index("idx", {"mappings": {"properties": {"t": {"type": "text", "analyzer": "french"}}}})
    assert not engine.index_exists("idx")


def test_a_refused_mapping_update_leaves_the_mapping_as_it_was(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", {"mappings": {"dynamic": "strict", "properties": {"tag": {"type": "keyword"}}}})
    for refused in ({"where": {"type": "geo_point"}}, {"t": {"type": "text", "similarity": "boolean"}}):
        with pytest.raises(RequestRejected):
            engine.put_mapping("idx", refused)
    assert engine.get_mapping("idx")["properties"] == {"tag": {"type": "keyword"}}


def test_kNN_sees_writes_made_through_another_connection(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", BODY)
    engine.bulk("idx", [BulkAction("index", "far", {"v": [0.0, 1.0]})])
    query = {"query": {"knn": {"v": {"vector": [1.0, 0.0], "k": 1}}}}
    assert [hit.id for hit in engine.search("idx", query).hits] == ["far"]
    other = EmbeddedEngine(engine.data_dir)
    try:
        other.bulk("idx", [BulkAction("index", "near", {"v": [1.0, 0.1]})])
    finally:
        other.close()
    assert [hit.id for hit in engine.search("idx", query).hits] == ["near"]


def test_the_data_outlives_the_engine(tmp_path: Path) -> None:
    first = EmbeddedEngine.from_settings(Settings(data_dir=tmp_path))
    first.create_index("idx", BODY)
    first.bulk("idx", docs("d", 4))
    first.update_aliases([{"add": {"index": "idx", "alias": "live"}}])
    first.close()
    second = EmbeddedEngine(tmp_path)
    try:
        assert second.count("live") == 4
        assert second.get_mapping("live") == BODY["mappings"]
    finally:
        second.close()


def test_the_async_engine_answers_like_the_sync_one(engine: EmbeddedEngine) -> None:
    engine.create_index("idx", BODY)
    engine.bulk("idx", docs("d", 5))
    body = {"query": {"match": {"text": "word3"}}}
    async_engine = AsyncEmbeddedEngine(engine=engine)

    async def run() -> tuple[list[str], list[str]]:
        one = await async_engine.search("idx", body)
        many = await async_engine.msearch("idx", [body, {"query": {"fuzzy": {}}}])
        assert isinstance(many[1], RequestRejected)
        assert not isinstance(many[0], Exception)
        return [hit.id for hit in one.hits], [hit.id for hit in many[0].hits]

    assert asyncio.run(run()) == (["d3"], ["d3"])


def test_esbridge_ingests_and_searches_hybrid_on_it_unchanged(engine: EmbeddedEngine, tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    load_records(engine, "notes", embedder, tmp_path, RECORDS)
    manager = IndexManager(engine, "notes", IndexParameters(dimension=embedder.dimension))
    assert manager.diff().is_empty
    again = ingest(tmp_path / "records.jsonl", engine=engine, manager=manager, embedder=embedder,
                   options=IngestOptions(source="t"))  # fmt: skip
    assert (again.chunks_indexed, again.unchanged) == (0, len(RECORDS))

    async def run(request: SearchRequest) -> list[str]:
        hybrid = HybridSearcher(AsyncEmbeddedEngine(engine=engine), "notes", embedder)
        response = await hybrid.search(request)
        assert response.warnings == []
        return [hit.doc_id for hit in response.results]

    assert asyncio.run(run(SearchRequest(query="sourdough starter")))[0] == "bread"
    energy = asyncio.run(run(SearchRequest(query="solar electricity", filters=Filters(terms={"tags": ["energy"]}))))
    assert energy[0] == "solar"
    assert set(energy) <= {"solar", "wind"}
    assert "old" not in asyncio.run(run(SearchRequest(query="energy memo coal")))
    outcome = manager.reindex(delete_old=True)
    assert (outcome.new, outcome.documents, engine.count("notes")) == ("notes-v2", len(RECORDS), len(RECORDS))


def test_the_code_and_path_analyzers_are_emulated_from_their_definitions() -> None:
    code = field_analysis("esbridge_code", analysis())
    assert code.analyze("getUserName(user_id) + os.path.join") == [
        "getusername", "get", "user", "name", "user_id", "user", "id", "os.path.join", "os", "path", "join",
    ]  # fmt: skip
    path = field_analysis("esbridge_path", analysis())
    assert path.analyze("notes/Baking/sour-dough_bread.md") == ["notes", "baking", "sour", "dough", "bread", "md"]
    assert field_analysis("english", analysis()).analyze("The foxes are jumping") == ["fox", "jump"]


def test_its_errors_keep_the_engine_status_but_do_not_claim_an_http_answer(engine: EmbeddedEngine) -> None:
    with pytest.raises(IndexNotFound) as missing:
        engine.refresh("nothing")
    assert missing.value.status == 404
    assert str(missing.value) == f"refresh failed on {engine.url}, index 'nothing': no such index [nothing]"
    engine.create_index("twice", BODY)
    with pytest.raises(IndexAlreadyExists) as twice:
        engine.create_index("twice", BODY)
    assert twice.value.status == 400
    assert "HTTP" not in str(twice.value)


def test_documents_that_do_not_fit_the_mapping_are_refused_one_by_one(engine: EmbeddedEngine) -> None:
    engine.create_index(
        "idx",
        {"mappings": {"properties": {**BODY["mappings"]["properties"], "k": {"type": "keyword"},
                                     "d": {"type": "date"}, "b": {"type": "boolean"}}}},
    )  # fmt: skip
    refused: dict[str, dict[str, Any]] = {
        "nan": {"v": [float("nan"), 1.0]},
        "words": {"v": ["a", "b"]},
        "short": {"v": [1.0]},
        "zero": {"v": [0.0, 0]},
        "not-a-list": {"v": 3.0},
        "bool-in-vector": {"v": [1.0, True]},
        "nested-vector": {"v": [[1.0, 2.0]]},
        "beyond-float32": {"v": [1e39, 1.0]},
        "infinite": {"v": [float("-inf"), 1.0]},
        "bool-number": {"n": True},
        "object-number": {"n": {"x": 1}},
        "object-keyword": {"k": {"x": 1}},
        "bad-date": {"d": "yesterday"},
        "list-with-a-word-for-a-number": {"n": [1, "x"]},
        "list-with-an-object-keyword": {"k": ["a", {"x": 1}]},
    }
    accepted: dict[str, dict[str, Any]] = {
        "ints": {"v": [1, 2], "n": 3, "k": 7, "d": 1_700_000_000_000, "b": True},
        "numeric-strings": {"v": ["1.5", "2"], "n": "4", "k": ["a", "b"], "d": "2026-11-26T10:00:00Z"},
        "floats": {"v": [0.5, -0.25], "n": 2.0, "k": "x"},
        "lists": {"v": [1, 1], "n": [2, 3.5, None], "k": ["y", True, 5]},
    }
    actions = [BulkAction("index", doc_id, source) for doc_id, source in {**refused, **accepted}.items()]
    result = engine.bulk("idx", actions)
    assert {failure.id for failure in result.failed} == set(refused)
    assert all(failure.status == 400 and "mapper_parsing_exception" in failure.reason for failure in result.failed)
    reasons = {failure.id: failure.reason for failure in result.failed}
    assert "must be an array of numbers" in reasons["words"]
    assert "zero vector" in reasons["zero"]
    assert set(result.succeeded) == set(accepted)
    assert {hit.id for hit in engine.search("idx", {"query": {"range": {"n": {"gte": 2}}}}).hits} == set(accepted)
    nearest = engine.search("idx", {"size": 1, "query": {"knn": {"v": {"vector": [1.5, 2.0], "k": 1}}}}).hits
    assert nearest[0].id == "numeric-strings"


@pytest.mark.parametrize("vector", [[1.0, True], [1.0, "2"], [1.0], [1.0, None], "1,2"])
def test_a_knn_query_vector_must_be_numbers_of_the_fields_dimension(engine: EmbeddedEngine, vector: Any) -> None:
    engine.create_index("idx", BODY)
    engine.bulk("idx", [BulkAction("index", "a", {"v": [1.0, 2.0]})])
    with pytest.raises(RequestRejected, match="query vector must be 2 numbers"):
        engine.search("idx", {"query": {"knn": {"v": {"vector": vector, "k": 1}}}})
    subclass = [FloatSubclass(1.0), 2]  # a float subclass counts as a number
    assert [hit.id for hit in engine.search("idx", {"query": {"knn": {"v": {"vector": subclass, "k": 1}}}}).hits] == [
        "a"
    ]


class FloatSubclass(float):
    """A float subclass, as numpy's float64 is."""


def test_equal_bm25_scores_come_in_row_order_across_pages_without_scoring_every_match(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.create_index("idx", BODY)
    engine.bulk("idx", [BulkAction("index", f"top{i}", {"text": "alpha alpha alpha beta"}) for i in range(3)])
    engine.bulk("idx", [BulkAction("index", f"tie{i:02}", {"text": "alpha beta gamma"}) for i in range(40)])

    def everything(self: Any, query: Any) -> dict[int, float]:
        raise AssertionError("every match scored")

    monkeypatch.setattr(LexicalIndex, "scores", everything)
    pages = [
        [hit.id for hit in engine.search("idx", {"from": start, "size": 5, "query": {"match": {"text": "alpha"}}}).hits]
        for start in range(0, 15, 5)
    ]
    assert pages == [
        ["top0", "top1", "top2", "tie00", "tie01"],
        ["tie02", "tie03", "tie04", "tie05", "tie06"],
        ["tie07", "tie08", "tie09", "tie10", "tie11"],
    ]
    assert engine.search("idx", {"size": 0, "query": {"match": {"text": "gamma"}}}).total == 40
