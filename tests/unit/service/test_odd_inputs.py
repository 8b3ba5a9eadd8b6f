"""Bodies that are valid JSON but odd: each is a 4xx (or a per-record error) naming the problem, never a 500."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.service.conftest import KEY


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"modified_after": "2024-01-02", "modified_before": "2024-01-01T00:00:00+05:00"}, "body.filters"),
        ({"created_after": "2024-01-02T00:00:00+00:00", "created_before": "2024-01-01T00:00:00"}, "body.filters"),
    ],
)
def test_a_range_mixing_dates_with_and_without_offset_is_compared_not_a_500(
    client: TestClient, filters: dict[str, Any], field: str
) -> None:
    answer = client.post("/v1/search", json={"query": "solar", "filters": filters})
    assert answer.status_code == 422, answer.text
    assert "is later than" in answer.json()["error"]["message"]
    assert [item["field"] for item in answer.json()["error"]["fields"]] == [field]


def test_a_range_mixing_dates_with_and_without_offset_in_order_searches(client: TestClient) -> None:
    filters = {"modified_after": "2000-01-01", "modified_before": "2999-01-01T00:00:00+05:00"}
    answer = client.post("/v1/search", json={"query": "solar", "filters": filters})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"query": "solar", "filters": {"terms": {"tags": ["caf\\udce9"]}}}', "filters.terms.tags[0]"),
        (b'{"query": "solar", "category": "caf\\udce9"}', "category"),
        (b'{"query": "solar", "fusion": "\\udce9"}', "fusion"),
        (b'{"query": "solar", "weights": {"bm25\\udce9": 1}}', "weights.bm25\udce9"),
        (b'{"query": "caf\\udce9"}', "query"),
    ],
)
def test_a_lone_surrogate_escape_is_refused_naming_its_field_not_a_500(
    client: TestClient, body: bytes, where: str
) -> None:
    # Valid JSON, but no text: the search failed in pydantic's JSON serializer (500, or a plain-text 500 when the
    # refusing message quoted the value).
    answer = client.post("/v1/search", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert f"{where!r} is not valid text" in answer.json()["error"]["message"]


@pytest.mark.parametrize("fusion", ["qpp", "linear", "rrf", "dbsf", "adaptive"])
def test_weights_whose_sum_overflows_are_refused_not_a_500(client: TestClient, fusion: str) -> None:
    body = {"query": "solar", "fusion": fusion, "weights": {"bm25": 1e308, "knn": 1e308}}
    answer = client.post("/v1/search", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["kind"] == "invalid_value"
    assert "weights" in answer.json()["error"]["message"]


def test_a_record_nested_too_deeply_fails_alone_not_the_batch(client: TestClient) -> None:
    deep: Any = 1
    for _ in range(500):
        deep = {"a": deep}
    documents = [{"id": "deep", "text": "x", "metadata": deep}, {"id": "fine", "text": "a fine record"}]
    answer = client.post("/v1/documents", json={"documents": documents}, headers={"X-API-Key": KEY})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [result["status"] for result in results] == ["error", "ok"]
    assert results[0]["error"] == "field 'metadata': nested more than 100 levels deep"


def test_a_record_whose_metadata_is_over_the_cap_fails_alone_naming_it(client: TestClient) -> None:
    documents = [{"id": "fat", "text": "x", "metadata": {"blob": "x" * 70_000}}, {"id": "fine", "text": "fine"}]
    answer = client.post("/v1/documents", json={"documents": documents}, headers={"X-API-Key": KEY})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [result["status"] for result in results] == ["error", "ok"]
    assert results[0]["error"].startswith("record 'fat': metadata ")
    assert "68.4 KiB as JSON, over the 64 KiB a record may store" in results[0]["error"]


@pytest.mark.parametrize(
    ("path", "content_type", "said"),
    [
        ("/v1/search", "application/x-www-form-urlencoded", "not application/x-www-form-urlencoded"),  # curl -d's
        ("/v1/search", "text/plain; charset=utf-8", "not text/plain"),
        ("/v1/documents", "multipart/form-data; boundary=x", "not multipart/form-data"),
        ("/v1/search", None, "none was given"),
    ],
)
def test_a_json_body_sent_as_another_media_type_is_415_naming_it(
    client: TestClient, path: str, content_type: str | None, said: str
) -> None:
    body = b'{"query": "solar"}' if path == "/v1/search" else b'{"documents": [{"id": "a"}]}'
    headers = {"X-API-Key": KEY, **({"Content-Type": content_type} if content_type else {})}
    answer = client.post(path, content=body, headers=headers)
    assert answer.status_code == 415, answer.text
    error = answer.json()["error"]
    assert error["kind"] == "unsupported_media_type"
    assert error["message"] == f"the body must be JSON sent with Content-Type: application/json ({said})"


def test_json_media_types_are_read_as_json_and_no_body_is_a_missing_one(client: TestClient) -> None:
    for content_type in ("application/json; charset=utf-8", "application/vnd.api+json"):
        answer = client.post("/v1/search", content=b'{"query": "solar"}', headers={"Content-Type": content_type})
        assert answer.status_code == 200, (content_type, answer.text)
    empty = client.post("/v1/search")
    assert (empty.status_code, empty.json()["error"]["message"]) == (422, "body: Field required")


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate"])
def test_a_compressed_body_is_415_naming_the_encoding_not_a_json_error(client: TestClient, encoding: str) -> None:
    body = gzip.compress(b'{"query": "solar"}')
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    answer = client.post("/v1/search", content=body, headers=headers)
    assert answer.status_code == 415, answer.text
    assert answer.json()["error"] == {
        "kind": "unsupported_media_type",
        "message": f"the body must be sent uncompressed (Content-Encoding {encoding} is not supported)",
        "fields": [],
    }
    plain = client.post("/v1/search", json={"query": "solar"}, headers={"Content-Encoding": "identity"})
    assert plain.status_code == 200, plain.text


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"NaN", "NaN is not a JSON value"),
        (b"-Infinity", "-Infinity is not a JSON value"),
        (b"1e999", "the number 1e999 is beyond a 64-bit float's range"),
    ],
)
def test_a_number_json_does_not_have_is_refused_as_a_jsonl_line_is_not_stored_as_a_string(
    client: TestClient, value: bytes, reason: str
) -> None:
    body = b'{"documents": [{"id": "odd", "text": "odd number", "metadata": {"x": ' + value + b"}}]}"
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    answer = client.post("/v1/documents", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {
        "kind": "invalid_json",
        "message": f"the body is not valid JSON: {reason}",
        "fields": [],
    }
    search = client.post(
        "/v1/search", content=b'{"query": "solar", "weights": {"bm25": ' + value + b"}}", headers=headers
    )
    assert (search.status_code, search.json()["error"]["kind"]) == (400, "invalid_json")
    found = client.post("/v1/search", json={"query": "odd number", "top_n": 10}).json()["results"]
    assert "odd" not in {hit["doc_id"] for hit in found}


def test_a_key_given_twice_is_refused_as_a_jsonl_line_is_rather_than_one_value_dropped(client: TestClient) -> None:
    headers = {"X-API-Key": KEY, "Content-Type": "application/json"}
    body = (
        b'{"documents": [{"id": "twice-a", "text": "first twin"}],'
        b' "documents": [{"id": "twice-b", "text": "second twin"}]}'
    )
    answer = client.post("/v1/documents", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == (
        "the body is not valid JSON: the key 'documents' is given twice in one object, so one of its values would"
        " be lost"
    )
    nested = b'{"documents": [{"id": "twice-c", "text": "a", "text": "b"}]}'
    assert client.post("/v1/documents", content=nested, headers=headers).json()["error"]["kind"] == "invalid_json"
    found = client.post("/v1/search", json={"query": "twin", "top_n": 10}).json()["results"]
    assert not {"twice-a", "twice-b", "twice-c"} & {hit["doc_id"] for hit in found}
