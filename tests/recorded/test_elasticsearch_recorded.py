"""The Elasticsearch adapter through the real elasticsearch-py client, against recorded answers.

The answers come from Elastic's published API specification examples and documented error formats
(tests/fixtures/elasticsearch/README.md lists each source). The replay server speaks real HTTP, so the
client's own header checks and parsing run; each test also checks the request the adapter sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from esbridge.cli import main
from esbridge.config import load_settings
from esbridge.engines import BulkAction, connect_async
from esbridge.engines.analysis import analysis_probes
from esbridge.engines.dialect import index_settings, knn_body, match_body, vector_field
from esbridge.engines.elasticsearch import ElasticsearchEngine
from esbridge.engines.factory import resolve_kind
from esbridge.errors import (
    AuthenticationError,
    EngineResponseError,
    EngineUnavailable,
    IndexAlreadyExists,
    IndexNotFound,
    RequestRejected,
    UnsupportedFeature,
)
from tests.support.loopback import Recording, ReplayServer, load_recording, route_elasticsearch_probe


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer()
    route_elasticsearch_probe(replay, major=8, licence="basic")
    with replay.running():
        yield replay


def adapter_for(server: ReplayServer, **auth: str) -> ElasticsearchEngine:
    return ElasticsearchEngine(load_settings(url=server.url, engine="elasticsearch", retries=0, auth=auth or None))


def test_probe_on_a_basic_licence(server: ReplayServer) -> None:
    capabilities = adapter_for(server).probe()
    assert capabilities.distribution == "elasticsearch"
    assert capabilities.version == "8.17.0"
    assert capabilities.knn is True
    assert capabilities.health == load_recording("cluster_health").body["status"]
    assert capabilities.license == "basic"
    assert capabilities.native_hybrid == {
        "retrievers": True,
        "rrf_retriever": False,
        "linear_retriever": False,
        "rrf_weights": False,
        "linear_l2_norm": False,
    }
    assert any("enterprise" in note for note in capabilities.notes)
    assert capabilities.features == {"text_analysis": True, "reindex": True}
    # The 8.x client asks for 8.x semantics, which 9.x servers still honour (REST API compatibility).
    accept = server.requests_to("GET", "/_cluster/health")[0].headers["accept"]
    assert "compatible-with=8" in accept


@pytest.mark.parametrize(
    ("nodes", "licence", "rrf", "linear"),
    [
        ("nodes_info_8", "license_enterprise", True, False),
        ("nodes_info_9", "license_enterprise", True, True),
        ("nodes_info_9", "license_trial", True, True),
        ("nodes_info_9", "license_basic", False, False),
        ("nodes_info_9", "license_trial_expired", False, False),
        ("nodes_info_integ_test_9", "license_enterprise", False, False),
    ],
)
def test_probe_by_version_licence_and_modules(
    server: ReplayServer, nodes: str, licence: str, rrf: bool, linear: bool
) -> None:
    server.route("GET", "/_nodes/_local/plugins,settings", nodes)
    server.route("GET", "/_license", licence)
    capabilities = adapter_for(server).probe()
    assert capabilities.native_hybrid["rrf_retriever"] is rrf
    assert capabilities.native_hybrid["linear_retriever"] is linear
    assert capabilities.license == load_recording(licence).body["license"]["type"]


def test_a_stripped_build_says_what_it_lacks(server: ReplayServer) -> None:
    server.route("GET", "/", "error_405_root_integ_test")
    server.route("GET", "/_nodes/_local/plugins,settings", "nodes_info_integ_test_9")
    server.route("POST|GET", "/_analyze", "error_400_analyze_unknown_analyzer")
    capabilities = adapter_for(server).probe()
    assert capabilities.version == "9.5.3"
    assert capabilities.features == {"text_analysis": False, "reindex": False}
    assert any("module analysis-common absent: no" in note for note in capabilities.notes)
    assert resolve_kind(load_settings(url=server.url)) == "elasticsearch"


def test_a_stripped_build_with_the_analysis_from_a_plugin_can_take_the_full_mapping(server: ReplayServer) -> None:
    server.route("GET", "/", "error_405_root_integ_test")
    server.route("GET", "/_nodes/_local/plugins,settings", "nodes_info_integ_test_9")
    server.route("POST|GET", "/_analyze", "analyze_tokens")
    capabilities = adapter_for(server).probe()
    assert capabilities.features == {"text_analysis": True, "reindex": False}
    assert any("a plugin provides the analysis" in note for note in capabilities.notes)
    assert not any("module analysis-common absent: no" in note for note in capabilities.notes)
    sent = [request.json() for request in server.requests_to("POST|GET", "/_analyze")]
    assert sent == analysis_probes()


def test_a_full_distribution_is_not_asked_to_analyse(server: ReplayServer) -> None:
    capabilities = adapter_for(server).probe()
    assert capabilities.features["text_analysis"] is True
    assert server.requests_to("POST|GET", "/_analyze") == []


def test_info_json_command_against_recorded_elasticsearch(server: ReplayServer) -> None:
    server.route("GET", "/", "info_9")
    server.route("GET", "/_nodes/_local/plugins,settings", "nodes_info_9")
    result = CliRunner().invoke(main, ["info", "--json", "--url", server.url])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["distribution"], data["version"], data["knn"]) == ("elasticsearch", "9.1.0", True)
    assert data["native_hybrid"]["rrf_retriever"] is False  # basic licence


def test_auto_detection_recognises_elasticsearch(server: ReplayServer) -> None:
    assert resolve_kind(load_settings(url=server.url)) == "elasticsearch"


def test_create_index_sends_a_dense_vector_mapping(server: ReplayServer) -> None:
    server.route("PUT", "/books", "indices_create")
    mapping = {"properties": {"title": {"type": "text"}, "vector": vector_field("elasticsearch", 3)}}
    adapter_for(server).create_index("books", {"settings": index_settings("elasticsearch"), "mappings": mapping})
    sent = server.requests_to("PUT", "/books")[0].json()
    assert sent["mappings"]["properties"]["vector"] == {
        "type": "dense_vector",
        "dims": 3,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
    }
    assert sent["settings"] == {"index": {"number_of_shards": 1, "number_of_replicas": 0}}


def test_create_existing_index_and_delete_missing_index(server: ReplayServer) -> None:
    server.route("PUT", "/books", "error_400_resource_already_exists")
    server.route("DELETE", "/missing", "error_404_index_not_found")
    adapter = adapter_for(server)
    with pytest.raises(IndexAlreadyExists, match=r"create index failed on .* index 'books'"):
        adapter.create_index("books", {"mappings": {}})
    with pytest.raises(IndexNotFound):
        adapter.delete_index("missing")
    assert adapter.delete_index("missing", missing_ok=True) is False


def test_delete_and_exists(server: ReplayServer) -> None:
    server.route("DELETE", "/books", "indices_delete")
    server.route("HEAD", "/books", "indices_exists_true")
    server.route("HEAD", "/missing-index", "indices_exists_false")
    adapter = adapter_for(server)
    assert adapter.index_exists("books") is True
    assert adapter.index_exists("missing-index") is False
    assert adapter.delete_index("books") is True


def test_bulk_sends_ndjson_and_reports_each_failure(server: ReplayServer) -> None:
    server.route("PUT|POST", "/_bulk", "bulk_partial_failure")
    actions = [BulkAction("index", str(n), {"title": f"book {n}", "page_count": n}) for n in (1, 2, 3)]
    result = adapter_for(server).bulk("books", actions)
    request = server.requests_to("PUT|POST", "/_bulk")[0]
    assert request.headers["content-type"].startswith("application/vnd.elasticsearch+x-ndjson")
    assert request.ndjson()[:2] == [{"index": {"_index": "books", "_id": "1"}}, {"title": "book 1", "page_count": 1}]
    assert list(result.succeeded) == ["1"]
    assert [(failure.id, failure.status, failure.retryable) for failure in result.failed] == [
        ("2", 400, False),
        ("3", 429, True),
    ]
    assert result.failed[0].reason.startswith("document_parsing_exception: [1:15] failed to parse field [page_count]")


def test_bm25_search_parses_hits(server: ReplayServer) -> None:
    server.route("POST", "/retrievers_example/_search", "search_bm25")
    result = adapter_for(server).search("retrievers_example", match_body("medicine", ["text"], size=2))
    recorded = load_recording("search_bm25").body["hits"]["hits"]
    assert [(hit.id, hit.score) for hit in result.hits] == [(h["_id"], h["_score"]) for h in recorded]
    assert result.hits[0].source["topic"] == ["ai", "medicine"]
    assert result.took_ms == 3
    sent = server.requests_to("POST", "/retrievers_example/_search")[0].json()
    assert sent["query"]["bool"]["must"][0]["multi_match"]["query"] == "medicine"


def test_knn_search_sends_the_top_level_knn_section(server: ReplayServer) -> None:
    server.route("POST", "/retrievers_example/_search", "search_knn")
    body = knn_body(
        "elasticsearch", "vector", [0.23, 0.67, 0.89], k=3, num_candidates=5, filters=[{"term": {"topic": "ai"}}]
    )
    result = adapter_for(server).search("retrievers_example", body)
    assert [hit.id for hit in result.hits] == [h["_id"] for h in load_recording("search_knn").body["hits"]["hits"]]
    sent = server.requests_to("POST", "/retrievers_example/_search")[0].json()
    assert sent["knn"] == {
        "field": "vector",
        "query_vector": [0.23, 0.67, 0.89],
        "k": 3,
        "num_candidates": 5,
        "filter": {"bool": {"filter": [{"term": {"topic": "ai"}}]}},
    }
    assert "query" not in sent


async def test_async_search_uses_the_same_recording(server: ReplayServer) -> None:
    server.route("POST", "/retrievers_example/_search", "search_bm25")
    adapter = connect_async(load_settings(url=server.url, retries=0), kind="elasticsearch")
    try:
        result = await adapter.search("retrievers_example", match_body("medicine", ["text"], size=2))
    finally:
        await adapter.close()
    assert [hit.id for hit in result.hits] == ["2", "1"]


def test_unauthenticated_request_is_an_authentication_error_naming_the_url(server: ReplayServer) -> None:
    server.route("GET", "/_cluster/health", "error_401_unable_to_authenticate")
    adapter = adapter_for(server, username="elastic", password="wrong-password")
    with pytest.raises(AuthenticationError) as caught:
        adapter.probe()
    message = str(caught.value)
    assert server.url in message
    assert "unable to authenticate user [elastic]" in message
    assert "wrong-password" not in message
    sent = server.requests_to("GET", "/_cluster/health")[0].headers["authorization"]
    assert sent.startswith("Basic ")


def test_api_key_is_sent_as_an_apikey_header(server: ReplayServer) -> None:
    adapter_for(server, api_key="c2VjcmV0OmtleQ==").probe()
    assert server.requests_to("GET", "/_cluster/health")[0].headers["authorization"] == "ApiKey c2VjcmV0OmtleQ=="


def test_rrf_on_a_basic_licence_is_an_unsupported_feature(server: ReplayServer) -> None:
    server.route("POST", "/retrievers_example/_search", "error_403_rrf_license")
    with pytest.raises(UnsupportedFeature, match="non-compliant for \\[Reciprocal Rank Fusion"):
        adapter_for(server).search("retrievers_example", {"retriever": {"rrf": {"retrievers": []}}})


def test_bad_request_is_rejected_with_the_servers_reason(server: ReplayServer) -> None:
    server.route("POST", "/my-index-000001/_search", "error_400_illegal_argument")
    with pytest.raises(RequestRejected, match="illegal_argument_exception"):
        adapter_for(server).search("my-index-000001", {"size": 1})


def test_a_server_that_is_not_elasticsearch_is_refused(server: ReplayServer) -> None:
    body = load_recording("cluster_health").body
    server.route("GET", "/_cluster/health", Recording(200, body, {"Content-Type": "application/json"}))
    with pytest.raises(EngineResponseError, match="does not identify as Elasticsearch"):
        adapter_for(server).probe()


def test_the_opensearch_adapter_refuses_an_elasticsearch_that_answers_get_root() -> None:
    from esbridge.engines.opensearch import OpenSearchEngine

    replay = ReplayServer()
    # What Elasticsearch answers a client that asks for no vendor media type: plain JSON.
    replay.route("GET", "/", Recording(200, load_recording("info_9").body, {"Content-Type": "application/json"}))
    with replay.running():
        adapter = OpenSearchEngine(load_settings(url=replay.url, engine="opensearch", retries=0))
        with pytest.raises(EngineResponseError, match=r"Elasticsearch, not OpenSearch .* engine = 'elasticsearch'"):
            adapter.probe()
        adapter.close()


def test_licence_endpoint_refused_leaves_licensed_features_off(server: ReplayServer) -> None:
    forbidden = {
        "error": {
            "type": "security_exception",
            "reason": "action [cluster:monitor/xpack/license/get] is unauthorized for user [reader]",
        },
        "status": 403,
    }
    server.route("GET", "/_license", Recording(403, forbidden, load_recording("info_8").headers))
    capabilities = adapter_for(server).probe()
    assert capabilities.license is None
    assert capabilities.native_hybrid["rrf_retriever"] is False
    assert any("licence unknown" in note for note in capabilities.notes)


def test_unreachable_server_names_the_url() -> None:
    replay = ReplayServer()
    with replay.running():
        url = replay.url
    adapter = ElasticsearchEngine(load_settings(url=url, engine="elasticsearch", retries=0, timeout_s=2))
    with pytest.raises(EngineUnavailable, match=url.replace(".", r"\.")):
        adapter.probe()
