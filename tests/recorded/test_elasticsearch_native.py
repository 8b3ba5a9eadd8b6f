"""Native hybrid through the real elasticsearch-py client, against recorded Elasticsearch 9.1 answers.

The retriever responses are Elastic's documented examples (tests/fixtures/elasticsearch/README.md); the
requests esbridge sends are checked against the documented rrf and linear retriever formats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from esbridge.config import Settings, load_settings
from esbridge.query.api import searcher
from esbridge.query.models import SearchRequest, SearchResponse
from tests.support.loopback import ELASTIC_HEADERS, Recording, ReplayServer, load_recording, route_elasticsearch_probe
from tests.support.memory_engine import StubEmbedder

INDEX = "retrievers_example"


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer()
    route_elasticsearch_probe(replay, major=9, licence="trial")
    # An index that records no model: the searcher reads the mapping once before its first query.
    mapping: dict[str, Any] = {INDEX: {"mappings": {"properties": {}}}}
    replay.route("GET", f"/{INDEX}/_mapping", Recording(200, mapping, dict(ELASTIC_HEADERS)))
    with replay.running():
        yield replay


def settings_for(server: ReplayServer, **pipeline: Any) -> Settings:
    return load_settings(
        url=server.url,
        engine="elasticsearch",
        index=INDEX,
        retries=0,
        # linear unless a case names another: the default, qpp, has no native form.
        pipeline={"fusion": "linear", "recency": {"enabled": False}, "cache": {"results": 0}, **pipeline},
    )


def run(settings: Settings, **request: Any) -> SearchResponse:
    async def go() -> SearchResponse:
        async with searcher(settings, StubEmbedder()) as hybrid:
            return await hybrid.search(SearchRequest(**{"query": "artificial intelligence", **request}))

    return asyncio.run(go())


def test_rrf_retriever_request_and_answer(server: ReplayServer) -> None:
    server.route("POST", f"/{INDEX}/_search", "search_rrf_retriever")
    response = run(settings_for(server, fusion="rrf"), top_n=3)
    assert response.search_mode == "native-hybrid"
    assert response.warnings == []
    assert [hit.id for hit in response.results] == ["1", "2", "3"]  # 1 and 2 tie at 0.8333334
    assert [hit.score for hit in response.results] == [1.0, 1.0, pytest.approx(0.25 / 0.8333334)]
    sent = server.requests_to("POST", f"/{INDEX}/_search")[0].json()
    rrf = sent["retriever"]["rrf"]
    assert (rrf["rank_constant"], rrf["rank_window_size"], sent["size"]) == (60, 10, 10)
    standard, nearest = rrf["retrievers"]
    assert standard["standard"]["query"]["bool"]["should"][0]["combined_fields"]["query"] == "artificial intelligence"
    assert nearest["knn"]["query_vector"] == [1.0, 0.0, 0.0]
    assert "Deprecated" in nearest["knn"]["filter"]["bool"]["must_not"][0]["terms"]["status"]


def test_linear_retriever_request_and_answer(server: ReplayServer) -> None:
    server.route("POST", f"/{INDEX}/_search", "search_linear_retriever")
    response = run(settings_for(server, fusion="linear", weights={"bm25": 2.0, "knn": 1.5}), top_n=3)
    assert response.search_mode == "native-hybrid"
    assert [hit.id for hit in response.results] == ["2", "1", "3"]
    sent = server.requests_to("POST", f"/{INDEX}/_search")[0].json()
    children = sent["retriever"]["linear"]["retrievers"]
    assert [(c["weight"], c["normalizer"]) for c in children] == [(2.0, "minmax"), (1.5, "minmax")]
    assert set(children[0]["retriever"]) == {"standard"} and set(children[1]["retriever"]) == {"knn"}


def test_a_licence_refusal_falls_back_to_client_side_fusion(server: ReplayServer) -> None:
    server.route("POST", f"/{INDEX}/_search", "error_403_linear_license")
    bm25, knn = load_recording("search_bm25").body, load_recording("search_knn").body
    # CONSTRUCTED: an _msearch answer wrapping the two recorded search answers, as the msearch API documents.
    both = {"took": 4, "responses": [{**bm25, "status": 200}, {**knn, "status": 200}]}
    server.route("POST", "/_msearch", Recording(200, both, dict(load_recording("search_bm25").headers)))
    response = run(settings_for(server, execution="msearch"))
    assert response.search_mode == "hybrid"
    assert any("native hybrid failed" in w and "linear retriever" in w for w in response.warnings)
    assert response.details.native is not None and response.details.native.used is False
    expected = {hit["_id"] for hit in bm25["hits"]["hits"]} | {hit["_id"] for hit in knn["hits"]["hits"]}
    assert {hit.id for hit in response.results} == expected


def test_a_basic_licence_is_known_before_asking(server: ReplayServer) -> None:
    server.route("GET", "/_license", "license_basic")
    bm25, knn = load_recording("search_bm25").body, load_recording("search_knn").body
    both = {"took": 4, "responses": [{**bm25, "status": 200}, {**knn, "status": 200}]}
    server.route("POST", "/_msearch", Recording(200, both, dict(load_recording("search_bm25").headers)))
    response = run(settings_for(server, execution="msearch"))
    assert response.search_mode == "hybrid"
    assert response.warnings == []
    assert "licence" in str(response.details.native and response.details.native.reason)
    assert server.requests_to("POST", f"/{INDEX}/_search") == []
