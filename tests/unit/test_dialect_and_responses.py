from __future__ import annotations

import pytest

from esbridge.engines.base import BulkAction
from esbridge.engines.dialect import index_settings, knn_body, match_body, vector_dimension, vector_field
from esbridge.engines.errors import from_response
from esbridge.engines.responses import bulk_lines, bulk_result, msearch_results, search_result
from esbridge.errors import EngineResponseError, IndexNotFound
from esbridge.mappings.schema import VECTOR_FIELD, mapped_vector_dimension


def test_opensearch_vector_field_names_the_lucene_engine() -> None:
    field = vector_field("opensearch", 384, m=24, ef_construction=128)
    assert field == {
        "type": "knn_vector",
        "dimension": 384,
        "method": {
            "name": "hnsw",
            "engine": "lucene",
            "space_type": "cosinesimil",
            "parameters": {"m": 24, "ef_construction": 128},
        },
    }
    assert index_settings("opensearch")["index"]["knn"] is True


def test_elasticsearch_vector_field_is_indexed_hnsw_cosine() -> None:
    field = vector_field("elasticsearch", 384)
    assert field["type"] == "dense_vector"
    assert field["dims"] == 384
    assert field["index"] is True
    assert field["similarity"] == "cosine"
    assert field["index_options"]["type"] == "hnsw"
    assert "knn" not in index_settings("elasticsearch")["index"]


def test_vector_dimension_must_be_positive() -> None:
    with pytest.raises(ValueError, match="dimension"):
        vector_field("opensearch", 0)


def test_the_dimension_is_read_back_from_either_dialects_vector_field() -> None:
    assert vector_dimension(vector_field("opensearch", 384)) == 384
    assert vector_dimension(vector_field("elasticsearch", 768)) == 768
    assert vector_dimension({"type": "keyword"}) is None
    assert vector_dimension({"type": "dense_vector", "dims": True}) is None
    assert vector_dimension({"type": "dense_vector", "dims": "384"}) is None


def test_an_index_mapping_gives_its_vector_fields_dimension_or_none() -> None:
    assert mapped_vector_dimension({"properties": {VECTOR_FIELD: vector_field("elasticsearch", 512)}}) == 512
    assert mapped_vector_dimension({"properties": {"title": {"type": "text"}}}) is None
    assert mapped_vector_dimension({}) is None


def test_knn_bodies_put_filters_inside_the_knn_search() -> None:
    term = {"term": {"tags": "python"}}
    os_body = knn_body("opensearch", "vector", [0.1, 0.2], k=5, filters=[term])
    assert os_body == {
        "size": 5,
        "query": {"knn": {"vector": {"vector": [0.1, 0.2], "k": 5, "filter": {"bool": {"filter": [term]}}}}},
    }
    es_body = knn_body("elasticsearch", "vector", [0.1, 0.2], k=5, num_candidates=50, filters=[term])
    assert es_body == {
        "size": 5,
        "knn": {
            "field": "vector",
            "query_vector": [0.1, 0.2],
            "k": 5,
            "num_candidates": 50,
            "filter": {"bool": {"filter": [term]}},
        },
    }
    assert knn_body("elasticsearch", "vector", [1.0], k=20, num_candidates=10)["knn"]["num_candidates"] == 20


def test_match_body_keeps_user_text_as_a_value() -> None:
    text = 'title:"x" OR *:* {"script": 1}'
    body = match_body(text, ["title^2", "body"], size=10)
    assert body["query"]["bool"]["must"][0]["multi_match"]["query"] == text
    assert body["size"] == 10


def test_search_result_reads_hits_and_totals() -> None:
    body = {
        "took": 3,
        "hits": {"total": {"value": 2, "relation": "eq"}, "hits": [{"_id": "a", "_score": 2.5, "_source": {"t": 1}}]},
    }
    result = search_result(body, url="u", index="i")
    assert result.total == 2
    assert result.took_ms == 3
    assert [(hit.id, hit.score, dict(hit.source)) for hit in result.hits] == [("a", 2.5, {"t": 1})]


def test_search_result_rejects_an_unexpected_shape() -> None:
    with pytest.raises(EngineResponseError, match="unexpected search response"):
        search_result({"nothing": True}, url="u", index="i")


def test_bulk_lines_and_result() -> None:
    actions = [
        BulkAction("index", "a", {"title": "A"}),
        BulkAction("index", "b", {"title": "B"}),
        BulkAction("delete", "gone"),
        BulkAction("index", "c", {"title": "C"}),
    ]
    assert bulk_lines("idx", actions)[:2] == [{"index": {"_index": "idx", "_id": "a"}}, {"title": "A"}]
    assert bulk_lines("idx", actions)[4] == {"delete": {"_index": "idx", "_id": "gone"}}
    response = {
        "errors": True,
        "items": [
            {"index": {"_id": "a", "status": 201}},
            {"index": {"_id": "b", "status": 400, "error": {"type": "mapper_parsing_exception", "reason": "bad"}}},
            {"delete": {"_id": "gone", "status": 404, "result": "not_found"}},
            {"index": {"_id": "c", "status": 429, "error": {"type": "es_rejected_execution_exception", "reason": "q"}}},
        ],
    }
    result = bulk_result(response, actions)
    assert list(result.succeeded) == ["a", "gone"]
    assert [(f.id, f.status, f.retryable) for f in result.failed] == [("b", 400, False), ("c", 429, True)]
    assert result.failed[0].reason == "mapper_parsing_exception: bad"


def test_bulk_result_reports_items_missing_from_the_response() -> None:
    actions = [BulkAction("index", "a", {}), BulkAction("index", "b", {})]
    result = bulk_result({"items": [{"index": {"status": 201}}]}, actions)
    assert [f.id for f in result.failed] == ["b"]


def test_index_action_needs_a_document() -> None:
    with pytest.raises(ValueError, match="no document"):
        bulk_lines("idx", [BulkAction("index", "a")])


def test_msearch_keeps_each_answer_in_order() -> None:
    ok = {"took": 1, "hits": {"total": {"value": 0}, "hits": []}}
    bad = {"status": 404, "error": {"type": "index_not_found_exception", "reason": "no such index [i]"}}
    results = msearch_results(
        {"responses": [ok, bad]},
        2,
        url="u",
        index="i",
        error_for=lambda status, body: from_response(status, body, url="u", operation="search", index="i"),
    )
    assert results[0].total == 0  # type: ignore[union-attr]
    assert isinstance(results[1], IndexNotFound)
    with pytest.raises(EngineResponseError, match="1 responses for 2 searches"):
        msearch_results(
            {"responses": [ok]},
            2,
            url="u",
            index="i",
            error_for=lambda s, b: EngineResponseError("x", url="u", operation="search"),
        )
