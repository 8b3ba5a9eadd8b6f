"""Bodies that are valid JSON but odd: each is a 4xx (or a per-record error) naming the problem, never a 500."""

from __future__ import annotations

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
